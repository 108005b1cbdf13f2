package firewall

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/validate"
)

// Forge is a git forge whose HTTPS git goes through the gateway's front
// door (docs/gateway.md, "Pushes scoped"): the agent's git sends the
// forge's https URLs to the forge's listener (ForgeListeners) in plain HTTP
// on loopback; HAProxy judges each request of git's smart-HTTP protocol
// (git.lua), adds the user's token for the repositories Token lists, and
// talks TLS to Host with its certificate verified. Unless Direct, direct
// TLS (and plain HTTP) to Host itself is refused on every port: its git
// goes through the front door or nowhere.
type Forge struct {
	// Host is the forge's name, e.g. github.com: allowed on Port.
	Host string
	// Port is its HTTPS port; 0 is 443.
	Port uint16
	// Token is the variable that holds the user's token on the host (e.g.
	// GITHUB_TOKEN): its entry in the keys map, which set-key fills like
	// a model key's. "": no token, every request goes without one.
	Token string
	// TokenRepos are the repositories ("owner/name", lower case, without
	// ".git") whose requests get the token; the others go without it, so
	// only public ones can be fetched. Push's repositories get it too.
	TokenRepos []string
	// Push are the repositories the agent may push to, and their branches.
	// None: no push passes.
	Push []ForgePush
	// Direct leaves direct TLS (and plain HTTP) to Host as the policy
	// allows it: the front door serves the agent's git, but its other
	// traffic to the name (a login, web pages) still passes.
	Direct bool
}

// ForgePush lets the agent push to some branches of a repository.
type ForgePush struct {
	Repo string // "owner/name", lower case, without ".git"
	// Branches are patterns of branch names (without refs/heads/): "*"
	// matches any characters but "/". Tags, other refs and deletions are
	// never pushed.
	Branches []string
}

// The forges' front doors: GatewayForgeListenBase for the first forge (by
// Host), one above for the next; on 127.0.0.1 below 1024, between the
// ports of allowed names and the keys.
const (
	GatewayForgeListenBase = 980
	GatewayForgeMax        = GatewayKeyListenBase - GatewayForgeListenBase
	// GatewayGitLua is git.lua in the egress image: the front door's judge.
	GatewayGitLua = "/etc/agentbox/git.lua"
	// forgeUser is the user name of the Basic credential that carries the
	// token (GitHub's name for a token; GitLab and Gitea take any name
	// with a personal access token).
	forgeUser = "x-access-token"
)

// GitLua is the front door's judge, which HAProxy loads from
// GatewayGitLua when a policy has forges: the same for every policy, so a
// project's egress image holds one.
func GitLua() []byte {
	out, err := execute("git.lua.tmpl", struct{ Header string }{Header})
	if err != nil {
		panic(err) // a constant template
	}
	return out
}

// ForgeURL is where the agent's git sends the https URLs of a forge whose
// front door listens on listen: git's url.<ForgeURL>.insteadOf.
func ForgeURL(listen int) string {
	return "http://127.0.0.1:" + strconv.Itoa(listen) + "/"
}

func (f Forge) port() uint16 {
	if f.Port == 0 {
		return 443
	}
	return f.Port
}

// URL is the forge's https URL of its repositories, ending in "/", which
// git's url.<ForgeURL>.insteadOf replaces.
func (f Forge) URL() string {
	if f.port() == 443 {
		return "https://" + f.Host + "/"
	}
	return "https://" + f.Host + ":" + strconv.Itoa(int(f.port())) + "/"
}

// ForgeListeners returns each forge's front door port by Host.
func ForgeListeners(forges []Forge) map[string]int {
	hosts := make([]string, 0, len(forges))
	for _, f := range forges {
		hosts = append(hosts, f.Host)
	}
	slices.Sort(hosts)
	out := make(map[string]int, len(hosts))
	for i, h := range hosts {
		out[h] = GatewayForgeListenBase + i
	}
	return out
}

// checkForges returns sorted copies of the forges, or an error for each
// that the normalized policy p cannot serve.
func checkForges(forges []Forge, p Policy) ([]Forge, []error) {
	if len(forges) == 0 {
		return nil, nil
	}
	if !p.Gateway {
		return nil, []error{errors.New("forges need the gateway (an allowlist with names)")}
	}
	if len(forges) > GatewayForgeMax {
		return nil, []error{fmt.Errorf("the gateway has front doors for at most %d forges, not %d", GatewayForgeMax, len(forges))}
	}
	var errs []error
	out := make([]Forge, 0, len(forges))
	for _, f := range forges {
		n, err := checkForge(f, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("forge %q: %w", f.Host, err))
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Forge) int { return strings.Compare(a.Host, b.Host) })
	for i := 1; i < len(out); i++ {
		if out[i-1].Host == out[i].Host {
			errs = append(errs, fmt.Errorf("forge %q: listed twice", out[i].Host))
		}
	}
	return out, errs
}

// checkForge checks one forge against the normalized policy p and returns
// it with sorted, unique repositories (push's among TokenRepos).
func checkForge(f Forge, p Policy) (Forge, error) {
	var errs []error
	if err := checkName(f.Host); err != nil {
		errs = append(errs, err)
	} else if !nameAllowed(f.Host, f.port(), p) {
		errs = append(errs, fmt.Errorf("%s is not allowed on port %d", f.Host, f.port()))
	}
	if f.Token != "" {
		if err := validate.EnvName(f.Token); err != nil {
			errs = append(errs, fmt.Errorf("token: %w", err))
		}
	} else if len(f.TokenRepos) > 0 || len(f.Push) > 0 {
		errs = append(errs, errors.New("repositories for the token, or pushes, but no token"))
	}
	out := Forge{Host: f.Host, Port: f.port(), Token: f.Token, TokenRepos: slices.Clone(f.TokenRepos), Direct: f.Direct}
	for _, r := range f.TokenRepos {
		if err := CheckRepo(r); err != nil {
			errs = append(errs, err)
		}
	}
	for _, push := range f.Push {
		if err := CheckRepo(push.Repo); err != nil {
			errs = append(errs, err)
		}
		if slices.ContainsFunc(out.Push, func(q ForgePush) bool { return q.Repo == push.Repo }) {
			errs = append(errs, fmt.Errorf("push: repository %q listed twice", push.Repo))
		}
		if len(push.Branches) == 0 {
			errs = append(errs, fmt.Errorf("push: repository %q: no branches", push.Repo))
		}
		for _, b := range push.Branches {
			if err := CheckBranchPattern(b); err != nil {
				errs = append(errs, fmt.Errorf("push: repository %q: %w", push.Repo, err))
			}
		}
		out.Push = append(out.Push, ForgePush{Repo: push.Repo, Branches: slices.Clone(push.Branches)})
		out.TokenRepos = append(out.TokenRepos, push.Repo)
	}
	slices.Sort(out.TokenRepos)
	out.TokenRepos = slices.Compact(out.TokenRepos)
	slices.SortFunc(out.Push, func(a, b ForgePush) int { return strings.Compare(a.Repo, b.Repo) })
	return out, errors.Join(errs...)
}

// nameAllowed says whether the normalized policy p allows name on port.
func nameAllowed(name string, port uint16, p Policy) bool {
	for _, d := range p.Domains {
		if (name == d.Name || strings.HasSuffix(name, "."+d.Name)) && slices.Contains(d.Ports, port) {
			return true
		}
	}
	return false
}

// CheckRepo says why r is not a repository as the front door names them:
// "owner/name" (GitLab: "group/sub/name"), segments of lower-case letters,
// digits and ._- that do not start with a dot or end with ".git".
func CheckRepo(r string) error {
	segs := strings.Split(r, "/")
	if len(segs) < 2 {
		return fmt.Errorf("repository %q: want owner/name", r)
	}
	for _, s := range segs {
		ok := s != "" && s[0] != '.' && !strings.HasSuffix(s, ".git")
		for _, c := range s {
			ok = ok && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("._-", c))
		}
		if !ok {
			return fmt.Errorf("repository %q: want owner/name in lower case, segments of letters, digits and ._- (not starting with a dot, without .git)", r)
		}
	}
	return nil
}

// CheckBranchPattern says why b is not a branch pattern: a branch name as
// git allows it (git check-ref-format), where "*" matches any characters
// but "/", and never ":" (the front door's separator).
func CheckBranchPattern(b string) error {
	bad := b == "" || len(b) > 200 || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") || strings.HasSuffix(b, ".") ||
		strings.Contains(b, "..") || strings.Contains(b, "//") || strings.Contains(b, "@{") || strings.HasPrefix(b, "-") ||
		strings.HasSuffix(b, ".lock") || strings.Contains(b, "/.") || strings.HasPrefix(b, ".") || strings.HasPrefix(b, "refs/")
	for _, c := range b {
		bad = bad || c <= ' ' || c == 0x7f || c > 0x7e || strings.ContainsRune(":~^?[\\", c)
	}
	if bad {
		return fmt.Errorf("branch pattern %q: want a branch's name without refs/heads/ (git check-ref-format), * for any characters but /", b)
	}
	return nil
}

// gatewayForge is one forge as templates/haproxy.cfg.tmpl sees it.
type gatewayForge struct {
	Forge
	Listen   int
	Push     []gatewayPush
	HostPort string // Host, and the port unless 443
	HostRE   string // HostPort as a regular expression
	Base     string // the front door's URL without its "/"
}

type gatewayPush struct {
	Repo, Branches string // Branches joined by ":"
}

// gatewayForges returns the normalized policy's forges with their front
// doors.
func gatewayForges(p Policy) []gatewayForge {
	listen := ForgeListeners(p.Forges)
	var out []gatewayForge
	for _, f := range p.Forges {
		hp := strings.TrimSuffix(strings.TrimPrefix(f.URL(), "https://"), "/")
		g := gatewayForge{Forge: f, Listen: listen[f.Host], HostPort: hp, HostRE: strings.ReplaceAll(hp, ".", `\.`),
			Base: strings.TrimSuffix(ForgeURL(listen[f.Host]), "/")}
		for _, push := range f.Push {
			g.Push = append(g.Push, gatewayPush{Repo: push.Repo, Branches: strings.Join(push.Branches, ":")})
		}
		out = append(out, g)
	}
	return out
}

// heldNames are the names of the credentials the gateway holds: the keys'
// and the forges' tokens, sorted, unique.
func heldNames(p Policy) []string {
	var out []string
	for _, k := range p.Keys {
		out = append(out, k.Name)
	}
	for _, f := range p.Forges {
		if f.Token != "" {
			out = append(out, f.Token)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// forgeNames are the names of the forges not Direct, which the ports'
// frontends refuse.
func forgeNames(p Policy) []string {
	var out []string
	for _, f := range p.Forges {
		if !f.Direct {
			out = append(out, "."+f.Host)
		}
	}
	return out
}
