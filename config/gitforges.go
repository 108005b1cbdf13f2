package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
)

// DefaultForge has a front door in every profile that allows it on port
// 443, whether git.forges lists it or not.
const DefaultForge = "github.com"

// gitForges checks git.forges: names, tokens that secrets or run.env pass
// (and that no model key uses), repositories and branch patterns as the
// gateway's front door reads them. Whether a profile allows the forge is
// the generator's to check.
func (c *checker) gitForges(forges []wireForge, cfg *Config) {
	seen := map[string]string{}
	for i, w := range entries(c, "git.forges", forges) {
		path := fmt.Sprintf("git.forges[%d]", i)
		f := GitForge{Host: strings.ToLower(w.Host), HostPos: c.pos[path+".host"]}
		if n, wildcard, err := validate.Domain(w.Host); err != nil || wildcard {
			c.failf(path+".host", "invalid forge %+q: want a name such as github.com", w.Host)
		} else {
			f.Host = n
		}
		if at, dup := seen[f.Host]; dup {
			p := c.pos[at]
			c.failf(path+".host", "%s is listed twice (at %d:%d)", f.Host, p.Line, p.Col)
		}
		seen[f.Host] = path + ".host"
		if w.Token != nil {
			f.Token = *w.Token
			c.forgeToken(path+".token", f.Token, cfg)
		}
		for j, r := range entries(c, path+".repos", w.Repos) {
			f.Repos = append(f.Repos, c.repo(fmt.Sprintf("%s.repos[%d]", path, j), r))
		}
		for j, p := range entries(c, path+".push", w.Push) {
			f.Push = append(f.Push, c.push(fmt.Sprintf("%s.push[%d]", path, j), p, f.Push))
		}
		if f.Token == "" && (len(f.Repos) > 0 || len(f.Push) > 0) {
			c.failf(path, "repos and push need a token: without one the forge sees no user, so only public repositories can be fetched and nothing pushed")
		}
		cfg.GitForges = append(cfg.GitForges, f)
	}
}

// forgeToken checks a forge's token: a name of secrets or run.env that no
// model key uses.
func (c *checker) forgeToken(path, name string, cfg *Config) {
	switch {
	case validate.EnvName(name) != nil:
		c.fail(path, validate.EnvName(name))
	case !slices.Contains(cfg.Secrets, name) && !slices.Contains(cfg.RunEnv, name):
		c.failf(path, "%+q is in neither secrets nor run.env: the token comes from the host like them", name)
	default:
		if _, ok := catalog.LookupModelKey(name); ok {
			c.failf(path, "%+q is a model key, which the gateway sends to its provider: name the forge's own token", name)
		}
	}
}

// repo checks a repository: lower-cased, as the front door compares them.
func (c *checker) repo(path, r string) string {
	r = strings.ToLower(strings.TrimSuffix(r, ".git"))
	if err := firewall.CheckRepo(r); err != nil {
		c.fail(path, err)
	}
	return r
}

// push checks one entry of push against the ones before it.
func (c *checker) push(path string, w wirePush, before []GitPush) GitPush {
	p := GitPush{Repo: c.repo(path+".repo", w.Repo)}
	if slices.ContainsFunc(before, func(q GitPush) bool { return q.Repo == p.Repo }) {
		c.failf(path+".repo", "%s is listed twice: write its branches in one entry", p.Repo)
	}
	if len(w.Branches) == 0 {
		c.failf(path+".branches", "no branches: leave the repository out to allow no push")
	}
	for k, b := range entries(c, path+".branches", w.Branches) {
		if err := firewall.CheckBranchPattern(b); err != nil {
			c.fail(fmt.Sprintf("%s.branches[%d]", path, k), err)
		}
		p.Branches = append(p.Branches, b)
	}
	return p
}
