package config

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The agent's git identity: author and committer of every commit made in
// the sandbox, set in the agent image (environment and system config), so
// that it needs no configuration, holds in every runtime (compose, the Dev
// Container, tasks, Kubernetes) and across recreation, and a reviewer tells
// the agent's commits from the user's by the address.

// GitDomain is the domain of the default addresses: .invalid is reserved
// (RFC 2606) and never delivers mail.
const GitDomain = "agentbox.invalid"

// maxGitField is the longest git.name or git.email accepted.
const maxGitField = 200

// GitIdentity returns the name and email of the agent's commits: git.name
// and git.email, or the agent's defaults.
func GitIdentity(cfg *Config) (name, email string) {
	name, email = cfg.GitName, cfg.GitEmail
	if name == "" {
		title := cfg.Agent.Title
		if title == "" {
			title = "Agent"
		}
		name = title + " (agentbox)"
	}
	if email == "" {
		local := cfg.Agent.Name
		if local == "" || cfg.Agent.Package == "" {
			local = "agent"
		}
		email = local + "@" + GitDomain
	}
	return name, email
}

// gitIdentity checks git.name and git.email: text that git keeps as
// written, and that the Dockerfile and a shell carry without quoting
// surprises.
func (c *checker) gitIdentity(w wireGit, cfg *Config) {
	if w.Name != nil {
		cfg.GitName = *w.Name
		if msg := gitFieldError(*w.Name); msg != "" {
			c.failf("git.name", "invalid name %+q: %s", *w.Name, msg)
		}
	}
	if w.Email != nil {
		cfg.GitEmail = *w.Email
		msg := gitFieldError(*w.Email)
		if local, domain, ok := strings.Cut(*w.Email, "@"); msg == "" && (!ok || local == "" || domain == "" || strings.ContainsFunc(*w.Email, unicode.IsSpace)) {
			msg = "want an address such as agent@example.com, without spaces"
		}
		if msg != "" {
			c.failf("git.email", "invalid email %+q: %s", *w.Email, msg)
		}
	}
}

// gitFieldError says what is wrong with a name or email, or "".
func gitFieldError(s string) string {
	switch {
	case s == "" || strings.TrimSpace(s) != s:
		return "empty, or with leading or trailing space"
	case len(s) > maxGitField:
		return "longer than 200 bytes"
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	case strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }):
		return "a character that is not printable, or a space other than U+0020 (a newline, a tab, a bidi override)"
	case strings.ContainsAny(s, "<>\"\\$`"):
		return "one of < > \" \\ $ `"
	}
	return ""
}
