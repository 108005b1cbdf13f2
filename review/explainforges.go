package review

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
)

// ForgeView is one entry of git.forges: a forge whose git goes through the
// gateway's front door (docs/gateway.md, "Pushes scoped"), the token the
// gateway adds for some repositories, and where the agent may push.
// github.com has a front door in every profile with the gateway that
// allows it, listed or not: unlisted, it is here as Default (no token, no
// push; direct TLS to it stays as the network allows it).
type ForgeView struct {
	Host    string      `json:"host"`
	Token   string      `json:"token,omitempty"` // the variable that holds it; "" for none
	Repos   []string    `json:"repos"`           // fetched with the token (push's too)
	Push    []ForgePush `json:"push"`
	Default bool        `json:"default,omitempty"` // config.DefaultForge, which git.forges does not list
	Origin
}

// ForgePush is where the agent may push: branch patterns of a repository.
type ForgePush struct {
	Repo     string   `json:"repo"`
	Branches []string `json:"branches"`
}

// forges are git.forges, each citing its entry, and the default front door
// of pol (the default profile's, with its forges planned), which
// git.forges does not list.
func (o origins) forges(cfg *config.Config, pol firewall.Policy) []ForgeView {
	out := []ForgeView{} // [] rather than null in JSON
	for _, f := range pol.Forges {
		if f.Direct && f.Host == config.DefaultForge {
			out = append(out, ForgeView{Host: f.Host, Repos: []string{}, Push: []ForgePush{}, Default: true, Origin: o.at("git.forges")})
		}
	}
	for i, f := range cfg.GitForges {
		v := ForgeView{Host: f.Host, Token: f.Token, Repos: append([]string{}, f.Repos...), Push: []ForgePush{}, Origin: o.at(fmt.Sprintf("git.forges[%d]", i))}
		for _, p := range f.Push {
			v.Push = append(v.Push, ForgePush{Repo: p.Repo, Branches: append([]string{}, p.Branches...)})
			v.Repos = append(v.Repos, p.Repo)
		}
		slices.Sort(v.Repos)
		v.Repos = slices.Compact(v.Repos)
		out = append(out, v)
	}
	return out
}

// forgeFacts: each repository the token goes with, each branch pattern the
// agent may push to.
func forgeFacts(s *Sandbox, add func(fact)) {
	for _, f := range s.Git.Forges {
		if f.Default {
			// What the network's entry for it allows, and no more: nothing gained.
			add(fact{what: "git forge", subject: f.Host, value: "front door (default), no token, no push", origin: f.Origin, aspect: GainReach, rule: neutral})
			continue
		}
		add(fact{what: "git forge", subject: f.Host, value: "front door, token " + cmpToken(f.Token), origin: f.Origin, aspect: GainSecrets, rule: neutral,
			gain: "the gateway adds the host's " + cmpToken(f.Token) + " to the requests of the forge's listed repositories"})
		for _, r := range f.Repos {
			add(fact{what: "git token", subject: f.Host + "/" + r, value: "fetched with " + f.Token, origin: f.Origin, aspect: GainSecrets, rule: grants,
				gain: "the agent reads " + f.Host + "/" + r + " with your token"})
		}
		for _, p := range f.Push {
			for _, b := range p.Branches {
				add(fact{what: "git push", subject: f.Host + "/" + p.Repo + " " + b, value: "allowed", origin: f.Origin, aspect: GainReach, rule: grants,
					gain: "the agent may push to the branches " + b + " of " + f.Host + "/" + p.Repo})
			}
		}
	}
}

func cmpToken(t string) string {
	if t == "" {
		return "none"
	}
	return strings.TrimSpace(t)
}
