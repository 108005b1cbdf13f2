package review

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// Sandbox is the effective sandbox in plain terms, built from the same Plan
// that render turns into the generated files. Its JSON form is the output of
// `agentbox explain --format json` (documented in docs/review.md).
type Sandbox struct {
	Name       string     `json:"name"`
	Agent      string     `json:"agent"`
	Network    Network    `json:"network"`
	Filesystem Filesystem `json:"filesystem"`
	Privileges Privileges `json:"privileges"`
	Pins       []Pin      `json:"pins"`
	Git        GitView    `json:"git"` // the identity of the agent's commits
	// Credentials are the user's credentials the agent gets.
	Credentials Credentials `json:"credentials"`
	// Profiles are every profile (trust tier), sorted by name; the
	// sections above are the balanced profile's.
	Profiles       []ProfileView `json:"profiles"`
	DefaultProfile string        `json:"default_profile"`
	// Env is the agent's environment, by name: the catalog's variables
	// and env's, each with what it can do.
	Env []EnvVar `json:"env"`
	// Time is how long agentbox run's tasks may take.
	Time TimeLimits `json:"time"`
	// Elevation is what agentbox allow may grant (the top-level section:
	// balanced's and open's; a profile's own is in Profiles).
	Elevation    ElevationView    `json:"elevation"`
	DevContainer DevContainerView `json:"devcontainer"`
	Kubernetes   *KubernetesView  `json:"kubernetes"` // null without the kubernetes section
	lines        map[string]int   // key path -> line, for DiffSandboxes
	lockLines    map[string]int   // agentbox.lock's key path -> line
	npmTree      *npm.Tree        // the agent CLI's tree, for supplyRows
	nameOrigin   Origin
	// profileOrigin is where profile (the default) is written.
	profileOrigin Origin
}

// Network is what the agent may reach, and what is always refused.
type Network struct {
	Domains []Destination `json:"domains"`
	CIDRs   []Destination `json:"cidrs"`
	Refused []string      `json:"refused"`
}

// Destination is one allowed name (with every name below it) or CIDR.
type Destination struct {
	Name       string   `json:"name"`
	Subdomains bool     `json:"subdomains"` // always true for a name, false for a CIDR
	Ports      []uint16 `json:"ports"`
	Sources    []string `json:"sources"` // "agent claude", "service github", "ide vscode", "network.domains", "network.cidrs"
	// PublicSuffix: the name is a public suffix (publicsuffix.go): anyone
	// can publish below it.
	PublicSuffix bool `json:"public_suffix"`
	Origin
	defaultPorts bool // an entry of the user's that names no ports: network.ports applies
}

// Origin is the agentbox.yaml key that causes a fact and where it is written
// (Line 0: a default that no key selects).
type Origin struct {
	File string `json:"file,omitempty"` // "": agentbox.yaml; else agentbox.lock
	Key  string `json:"key"`
	Line int    `json:"line"`
}

// Filesystem is what the agent container sees, and what agentbox fetch takes back.
type Filesystem struct {
	Mounts      []MountView  `json:"mounts"`
	StateVolume string       `json:"state_volume"` // "" when the agent has none
	Protected   []string     `json:"protected"`    // paths whose changes fetch refuses
	ReadOnly    []PathRule   `json:"readonly"`     // workspace.readonly
	Writable    []PathRule   `json:"writable"`     // workspace.writable
	Hidden      []HiddenRule `json:"hidden"`       // workspace.hidden, in order: the last match decides
}

// MountView is one mount of the agent container.
type MountView struct {
	Target string `json:"target"`
	Source string `json:"source"` // a volume's name or a project path
	Type   string `json:"type"`   // volume or bind
	Mode   string `json:"mode"`   // rw or ro
	Why    string `json:"why"`
	Origin
}

// PathRule is one entry of a workspace list.
type PathRule struct {
	Path string `json:"path"`
	Origin
}

// Privileges are the agent's user and limits.
type Privileges struct {
	User         string            `json:"user"`
	UID          int               `json:"uid"`
	GID          int               `json:"gid"`
	Capabilities []string          `json:"capabilities"` // always empty: cap_drop ALL
	NoNewPrivs   bool              `json:"no_new_privs"`
	Memory       string            `json:"memory"`
	MemoryBytes  int64             `json:"memory_bytes"`
	Pids         int               `json:"pids"`
	CPUs         string            `json:"cpus"` // "" for no limit
	keys         map[string]Origin // where uid, gid, memory, pids, cpus and agent are set
}

// Pin is one pinned input: an image (tag and digest), the agent CLI (its
// version, and its dependency tree's digest), a Debian package (its
// version in a release) or the Debian snapshot.
type Pin struct {
	Kind   string `json:"kind"`   // image, package, tree, debian or snapshot
	What   string `json:"what"`   // "agent image", "egress image", "agent CLI", "agent CLI tree", "Debian package", ...
	Name   string `json:"name"`   // repo, package, or archive
	Tag    string `json:"tag"`    // image tag, Debian release, or ""
	Digest string `json:"digest"` // image digest, version, the tree's digest or the snapshot's timestamp
	Origin
	// LockKey is the key of agentbox.lock that pins it: diff cites it
	// where the pin moved and the choice in agentbox.yaml did not.
	LockKey string `json:"lock_key,omitempty"`
}

// agentUser is the agent image's user (agent.Dockerfile.tmpl).
const agentUser = "agent"

// AlwaysRefused is what the firewall refuses whatever the policy says.
var AlwaysRefused = []string{
	"private, loopback, link-local (cloud metadata), CGNAT, multicast and ULA ranges, unless listed in network.cidrs",
	"IPv6 addresses that embed such an IPv4 address (NAT64, 6to4, IPv4-compatible)",
	"DNS to any resolver but the filter (every port-53 packet is redirected to it); unlisted names are NXDOMAIN",
	"UDP and ICMP (allowed traffic is TCP only)",
	"IPv4 and IPv6 addresses outside the allow sets, and IPv6 packets with a routing header",
}

// Explain describes the compiled sandbox; c must have been compiled to
// Planned or further.
func Explain(c *generator.Compiled) (*Sandbox, error) {
	p := c.Plan()
	if p == nil {
		return nil, errors.New("internal error: explaining a sandbox that was not planned")
	}
	o := origins{cfg: c.Config, pos: c.Positions(), lock: c.Lock}
	return &Sandbox{
		Name:           p.Name,
		Agent:          p.Agent.Name,
		Network:        o.network(p.Policy),
		Filesystem:     o.filesystem(p),
		Privileges:     o.privileges(p),
		Pins:           o.pins(p),
		Git:            o.git(p),
		Credentials:    o.credentials(),
		Profiles:       o.profiles(p),
		DefaultProfile: p.DefaultProfile,
		Env:            o.env(p),
		Time:           o.time(),
		Elevation:      o.elevation("elevation", o.topElevation()),
		DevContainer:   o.devcontainer(p),
		Kubernetes:     o.kubernetes(),
		lines:          lines(c.Positions()),
		lockLines:      lockLines(c.Lock),
		nameOrigin:     o.at("name"),
		profileOrigin:  o.at("profile"),
		npmTree:        p.NPMTree,
	}, nil
}

// topElevation is the top-level elevation section, defaults applied.
func (o origins) topElevation() config.Elevation {
	c := o.cfg
	return config.Elevation{Allowed: c.ElevationAllowed, AllowedPos: c.ElevationAllowedPos, Max: c.ElevationMax, MaxPos: c.ElevationMaxPos,
		RequestTimeout: c.ElevationRequestTimeout, RequestTimeoutPos: c.ElevationRequestTimeoutPos,
		Never: c.ElevationNever, NeverPos: c.ElevationNeverPos, NeverNames: c.ElevationNeverNames, NeverNamesPos: c.ElevationNeverNamesPos}
}

// GitView is the author and committer of the agent's commits.
type GitView struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	// Forges are git.forges (explainforges.go).
	Forges []ForgeView `json:"forges"`
	Origin
	nameOrigin, emailOrigin Origin // each where it is written, else the agent's
}

// git is the agent's git identity, citing git.name (else git.email) where
// either is written, else the agent, whose defaults they are.
func (o origins) git(p *generator.Plan) GitView {
	orig := o.at("git.name")
	if orig.Line == 0 {
		if orig = o.at("git.email"); orig.Line == 0 {
			orig = o.at("agent")
		}
	}
	return GitView{Name: p.GitName, Email: p.GitEmail, Origin: orig, Forges: o.forges(o.cfg, p.Default().Policy),
		nameOrigin: cmpOrigin(o.at("git.name"), o.at("agent")), emailOrigin: cmpOrigin(o.at("git.email"), o.at("agent"))}
}

// cmpOrigin is the first origin that is written in the file, else the last.
func cmpOrigin(os ...Origin) Origin {
	for _, o := range os {
		if o.Line != 0 {
			return o
		}
	}
	return os[len(os)-1]
}

// origins finds the agentbox.yaml key behind each fact.
type origins struct {
	cfg  *config.Config
	pos  yamlpos.Positions
	lock *lockfile.Lock // nil: no lock
}

// lockLines are the lines of agentbox.lock's keys; nil without a lock.
func lockLines(l *lockfile.Lock) map[string]int {
	if l == nil {
		return nil
	}
	return lines(l.Positions())
}

// imageLockKey is the key of agentbox.lock that pins image r ("": none).
func (o origins) imageLockKey(r images.Ref) string {
	if o.lock == nil {
		return ""
	}
	for k := range o.lock.Images {
		if kr, err := images.ParseRef(k); err == nil && kr.Key() == r.Key() {
			return yamlpos.Join("images", k)
		}
	}
	return ""
}

func lines(pos yamlpos.Positions) map[string]int {
	m := make(map[string]int, len(pos))
	for k, p := range pos {
		m[k] = p.Line
	}
	return m
}

func (o origins) at(key string) Origin {
	if key == "" {
		return Origin{}
	}
	if p, ok := o.pos[key]; ok {
		return Origin{Key: key, Line: p.Line}
	}
	return Origin{Key: key}
}

// source maps a policy source to its key.
func (o origins) source(src, name string) Origin {
	kind, arg, _ := strings.Cut(src, " ")
	switch kind {
	case "agent":
		return o.at("agent")
	case "service":
		return o.at(fmt.Sprintf("network.services[%d]", slices.Index(o.cfg.Services, arg)))
	case "ide":
		return o.at("devcontainer.ide")
	case "network.domains":
		for i, d := range o.cfg.Domains {
			if d.Name == name {
				return o.at(fmt.Sprintf("network.domains[%d]", i))
			}
		}
	case "network.cidrs":
		for i, c := range o.cfg.CIDRs {
			if c.Prefix.String() == name {
				return o.at(fmt.Sprintf("network.cidrs[%d]", i))
			}
		}
	}
	return Origin{Key: src}
}

func (o origins) network(pol firewall.Policy) Network {
	n := Network{Domains: []Destination{}, CIDRs: []Destination{}, Refused: AlwaysRefused}
	for _, d := range pol.Domains {
		src := d.Sources[len(d.Sources)-1] // network.domains sorts last: the user's own entry
		n.Domains = append(n.Domains, Destination{Name: d.Name, Subdomains: true, Ports: d.Ports,
			Sources: d.Sources, Origin: o.source(src, d.Name), defaultPorts: o.defaultPorts(src, d.Name), PublicSuffix: IsPublicSuffix(d.Name)})
	}
	for _, c := range pol.CIDRs {
		name := c.Prefix.String()
		orig := o.source("network.cidrs", name)
		if orig.Line == 0 {
			orig = o.containing(c)
		}
		n.CIDRs = append(n.CIDRs, Destination{Name: name, Ports: c.Ports, Sources: c.Sources, Origin: orig,
			defaultPorts: o.defaultPorts("network.cidrs", name)})
	}
	return n
}

// defaultPorts reports whether a destination of the user's takes
// network.ports.
func (o origins) defaultPorts(src, name string) bool {
	switch src {
	case "network.domains":
		return slices.ContainsFunc(o.cfg.Domains, func(d config.DomainRule) bool { return d.Name == name && d.Ports == nil })
	case "network.cidrs":
		return slices.ContainsFunc(o.cfg.CIDRs, func(c config.CIDRRule) bool { return c.Prefix.String() == name && c.Ports == nil })
	}
	return false
}

// containing finds the network.cidrs entry of a merged prefix.
func (o origins) containing(c firewall.CIDR) Origin {
	for i, r := range o.cfg.CIDRs {
		if r.Prefix == c.Prefix {
			return o.at(fmt.Sprintf("network.cidrs[%d]", i))
		}
	}
	return o.at("network.cidrs")
}

func (o origins) filesystem(p *generator.Plan) Filesystem {
	fs := Filesystem{StateVolume: p.StateVolume}
	for _, m := range p.Mounts {
		mode, src, orig := "rw", m.Source, Origin{}
		if m.ReadOnly {
			mode = "ro"
		}
		if m.Type == "bind" {
			src = m.Rel()
		}
		if m.Target == p.Workspace {
			orig = o.at("workspace.path")
		}
		if m.Source == p.StateVolume {
			orig = o.at("agent")
		}
		fs.Mounts = append(fs.Mounts, MountView{Target: m.Target, Source: src, Type: m.Type, Mode: mode, Why: m.Why, Origin: orig})
	}
	for _, e := range gitgate.Protected {
		fs.Protected = append(fs.Protected, e.Path)
	}
	fs.ReadOnly = o.rules("workspace.readonly", o.cfg.ReadOnly)
	fs.Writable = []PathRule{}
	for i, w := range o.cfg.Writable {
		fs.Writable = append(fs.Writable, PathRule{Path: w, Origin: o.entryAt("workspace.writable", o.cfg.WritablePos[i])})
	}
	fs.Hidden = hiddenRules(p.Hidden, o.rules("workspace.hidden", p.Hidden))
	return fs
}

func (o origins) rules(key string, paths []string) []PathRule {
	out := []PathRule{}
	for i, p := range paths {
		orig := o.at(fmt.Sprintf("%s[%d]", key, i))
		if orig.Line == 0 {
			orig = o.at(key)
		}
		out = append(out, PathRule{Path: p, Origin: orig})
	}
	return out
}

func (o origins) privileges(p *generator.Plan) Privileges {
	return Privileges{User: agentUser, UID: p.UID, GID: p.GID, Capabilities: []string{}, NoNewPrivs: true,
		Memory: p.Memory, MemoryBytes: o.cfg.MemoryBytes(), Pids: p.Pids, CPUs: p.CPUs,
		keys: map[string]Origin{
			"uid": o.at("image.user.uid"), "gid": o.at("image.user.gid"), "memory": o.at("resources.memory"),
			"pids": o.at("resources.pids"), "cpus": o.at("resources.cpus"), "agent": o.at("agent"),
		}}
}

func (o origins) pins(p *generator.Plan) []Pin {
	specs := o.cfg.ImageSpecs()
	pin := func(what string, r images.Ref, s config.ImageSpec) Pin {
		orig := o.at(s.Path)
		if s.Path == "" {
			orig = Origin{Key: "egress.image"}
		}
		return Pin{Kind: "image", What: what, Name: r.Repo, Tag: r.Tag, Digest: r.Digest, Origin: orig, LockKey: o.imageLockKey(r)}
	}
	pins := []Pin{pin("agent image", p.AgentImage, specs[0]), pin("egress image", p.EgressImage, specs[1])}
	if pkg := p.Agent.Package; pkg != "" {
		pins = append(pins, Pin{Kind: "package", What: "agent CLI", Name: pkg, Digest: p.AgentVersion, Origin: o.at("agent"),
			LockKey: yamlpos.Join(yamlpos.Join("npm", pkg), "version")})
	}
	if t := p.NPMTree; t != nil {
		sum := sha256.Sum256(t.PackageLock(""))
		n := fmt.Sprintf("%d packages", len(t.Packages))
		if len(t.Packages) == 1 {
			n = "1 package"
		}
		pins = append(pins, Pin{Kind: "tree", What: "agent CLI tree", Name: t.Name,
			Digest: "sha256:" + hex.EncodeToString(sum[:]) + " (" + n + ")", Origin: o.at("agent"), LockKey: treeLockKey(t.Name)})
	}
	return append(pins, o.debianPins(p)...)
}

// debianPins are the snapshot and each package's version (amd64's; arm64's
// too where it differs).
func (o origins) debianPins(p *generator.Plan) []Pin {
	if p.AgentApt == nil || p.EgressApt == nil {
		return nil
	}
	pins := []Pin{
		{Kind: "snapshot", What: "Debian snapshot", Name: "debian", Digest: p.AgentApt.Snapshot, LockKey: "debian.snapshot"},
		{Kind: "snapshot", What: "Debian security snapshot", Name: "debian-security", Digest: p.AgentApt.SecuritySnapshot, LockKey: "debian.security_snapshot"},
	}
	userKeys := map[string]string{}
	for i, pkg := range o.cfg.Packages {
		name, _, _ := strings.Cut(pkg, "=")
		userKeys[name] = fmt.Sprintf("image.packages[%d]", i)
	}
	seen := map[string]bool{}
	for _, ap := range []*generator.AptPlan{p.AgentApt, p.EgressApt} {
		byArch := map[string]map[string]string{}
		for _, a := range ap.Arches {
			byArch[a.Arch] = map[string]string{}
			for _, pv := range slices.Concat(a.Pins, a.Node) {
				name, v, _ := strings.Cut(pv, "=")
				byArch[a.Arch][name] = v
			}
		}
		for _, name := range slices.Sorted(maps.Keys(byArch[lockfile.Architectures[0]])) {
			if seen[ap.Release+" "+name] {
				continue
			}
			seen[ap.Release+" "+name] = true
			v := byArch[lockfile.Architectures[0]][name]
			for _, arch := range lockfile.Architectures[1:] {
				if w, ok := byArch[arch][name]; ok && w != v {
					v += " (" + arch + ": " + w + ")"
				}
			}
			key := yamlpos.Join(yamlpos.Join(yamlpos.Join(yamlpos.Join("debian.packages", ap.Release), lockfile.Architectures[0]), "packages"), name)
			pins = append(pins, Pin{Kind: "debian", What: "Debian package", Name: name, Tag: ap.Release, Digest: v, Origin: o.at(userKeys[name]), LockKey: key})
		}
	}
	return pins
}

// treeLockKey is the key of agentbox.lock that holds the tree of npm
// package name.
func treeLockKey(name string) string { return yamlpos.Join(yamlpos.Join("npm", name), "packages") }
