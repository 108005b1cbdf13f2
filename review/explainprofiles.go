package review

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// ProfileView is one profile (trust tier) in plain terms: what it admits
// and lets the agent write. The sandbox's Network, Filesystem and
// Privileges are the balanced profile's in full.
type ProfileView struct {
	Name       string   `json:"name"`
	From       string   `json:"from"`    // the built-in it derives from; itself for a built-in
	Default    bool     `json:"default"` // agentbox up without --profile, and the Dev Container
	Filesystem string   `json:"filesystem"`
	Network    string   `json:"network"` // none, allowlist or open
	Admits     []string `json:"admits"`  // allowlist: name:ports and CIDR:ports; open: the special ranges it admits after all
	Memory     string   `json:"memory"`
	Pids       int      `json:"pids"`
	CPUs       string   `json:"cpus"` // "" for no limit
	Elevation  bool     `json:"elevation"`
	ReadOnly   []string `json:"readonly"` // the profile's workspace.readonly, on top of the top-level one
	Hidden     []string `json:"hidden"`   // the profile's workspace.hidden, after the top-level one
	// HiddenRules are Hidden with the effect of each among all the
	// patterns of the profile (the top-level ones, then these).
	HiddenRules []HiddenRule `json:"hidden_rules"`
	// ElevationLimits are what agentbox allow may grant under it.
	ElevationLimits ElevationView `json:"elevation_limits"`
	// LimitOrigins are where memory, pids and cpus are set: the
	// profile's key, or the top-level one it inherits.
	LimitOrigins map[string]Origin `json:"limit_origins"`
	Compose      string            `json:"compose"` // its compose file
	Origin
	own bool // its network is its own (profiles.NAME.network), not the top-level one
	// admitOrigins are where each of Admits is written (its entry in the
	// profile's own network, a service, the agent), else the profile;
	// admitDefault says which of them take the profile's network.ports.
	admitOrigins []Origin
	admitDefault []bool
}

// The filesystems of a profile, as ProfileView says them.
const (
	fsReadWrite = "read-write clone"
	fsLocked    = "read-only clone; /tmp and " + generator.OutputDir + " writable; no state volume"
)

// profiles describes every profile of the plan.
func (o origins) profiles(p *generator.Plan) []ProfileView {
	var out []ProfileView
	for i, pp := range p.Profiles {
		prof := o.cfg.Profiles[i]
		v := ProfileView{Name: pp.Name, From: prof.From, Default: pp.Name == p.DefaultProfile, Filesystem: fsReadWrite,
			Network: networkName(pp.Policy.Mode), Admits: admits(pp.Policy), Memory: pp.Memory, Pids: pp.Pids, CPUs: pp.CPUs,
			Elevation: prof.Elevate.Allowed, Compose: pp.Compose, own: prof.Custom,
			ReadOnly: append([]string{}, prof.ReadOnly...), Hidden: append([]string{}, prof.Hidden...)}
		if pp.Locked {
			v.Filesystem = fsLocked
		}
		path := "profiles." + pp.Name
		v.admitOrigins, v.admitDefault = o.admitOrigins(pp.Policy, prof, yamlpos.Join("profiles", pp.Name))
		if !prof.Explicit {
			path = "elevation"
		}
		v.ElevationLimits = o.elevation(strings.Replace(path+".elevation", "elevation.elevation", "elevation", 1), prof.Elevate)
		v.LimitOrigins = map[string]Origin{}
		for _, k := range []string{"memory", "pids", "cpus"} {
			v.LimitOrigins[k] = o.at("resources." + k)
			if orig := o.at(path + ".resources." + k); orig.Line != 0 {
				v.LimitOrigins[k] = orig
			}
		}
		hidden := o.cfg.HiddenPatterns(&prof)
		top := len(hidden) - len(prof.Hidden)
		v.HiddenRules = []HiddenRule{}
		for j, h := range prof.Hidden {
			v.HiddenRules = append(v.HiddenRules, HiddenRule{Path: h, Effect: hiddenEffect(hidden, top+j),
				Origin: o.at(fmt.Sprintf("%s.workspace.hidden[%d]", path, j))})
		}
		if prof.Explicit {
			v.Origin = o.at("profiles." + pp.Name)
		}
		out = append(out, v)
	}
	return out
}

func networkName(m firewall.Mode) string {
	if m == firewall.ModeAllowlist {
		return "allowlist"
	}
	return string(m)
}

// admits lists a policy's destinations, one "name:ports" or "CIDR:ports"
// each; open mode admits every public address on every port besides.
func admits(pol firewall.Policy) []string {
	out := []string{}
	if pol.Mode == firewall.ModeOpen {
		out = append(out, "every public address, every TCP port; every name resolves")
	}
	for _, d := range pol.Domains {
		out = append(out, d.Name+":"+joinPorts(d.Ports))
	}
	for _, c := range pol.CIDRs {
		out = append(out, c.Prefix.String()+":"+joinPorts(c.Ports))
	}
	return out
}

// admitOrigins are where each destination admits(pol) lists is written
// for a profile at path: the entry of its own network that names it (the
// user's own entry first, as network's origins), a service, the agent or
// the IDE; {} where none is (open's every address). dflt says which are
// the user's entries without ports of their own.
func (o origins) admitOrigins(pol firewall.Policy, prof config.Profile, path string) (out []Origin, dflt []bool) {
	add := func(orig Origin, defaultPorts bool) { out, dflt = append(out, orig), append(dflt, defaultPorts) }
	at := func(list string, i int) Origin {
		if i < 0 {
			return Origin{}
		}
		return o.at(fmt.Sprintf("%s.network.%s[%d]", path, list, i))
	}
	if pol.Mode == firewall.ModeOpen {
		add(Origin{}, false)
	}
	for _, d := range pol.Domains {
		src := d.Sources[len(d.Sources)-1]
		kind, arg, _ := strings.Cut(src, " ")
		switch kind {
		case "network.domains":
			i := slices.IndexFunc(prof.Network.Domains, func(r config.DomainRule) bool { return r.Name == d.Name })
			add(at("domains", i), i >= 0 && prof.Network.Domains[i].Ports == nil)
		case "service":
			add(at("services", slices.Index(prof.Network.Services, arg)), false)
		default:
			add(o.source(src, d.Name), false)
		}
	}
	for _, c := range pol.CIDRs {
		i := slices.IndexFunc(prof.Network.CIDRs, func(r config.CIDRRule) bool { return r.Prefix == c.Prefix })
		add(at("cidrs", i), i >= 0 && prof.Network.CIDRs[i].Ports == nil)
	}
	return out, dflt
}

// profilePortsOrigin: a destination of a profile's own network that both
// sides admit with the profile's network.ports (its ports changed with
// them) is cited at the profile's network.ports.
func profilePortsOrigin(subject, side string, base, head *Sandbox) (Origin, bool) {
	prof, dest, _ := strings.Cut(subject, " ")
	name, _, _ := strings.Cut(dest, ":")
	for _, s := range []*Sandbox{base, head} {
		if !takesPorts(s, prof, name) {
			return Origin{}, false
		}
	}
	return yamlAt(yamlpos.Join("profiles", prof)+".network.ports", side, base, head)
}

// takesPorts: profile prof of s admits name by an entry without ports.
func takesPorts(s *Sandbox, prof, name string) bool {
	p := profileNamed(s, prof)
	for i, a := range p.Admits {
		if n, _, _ := strings.Cut(a, ":"); n == name && i < len(p.admitDefault) && p.admitDefault[i] {
			return true
		}
	}
	return false
}

func joinPorts(ps []uint16) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

// profileFacts are the profiles as diff facts: each profile's trust (its
// filesystem, network mode and elevation), what a profile with a network
// of its own admits (the others' follow the top-level network, whose rows
// say it once), a custom profile's limits and elevation, and the default.
// Hidden patterns are compared by hiddenRows.
func profileFacts(s *Sandbox, add func(fact)) {
	for _, p := range s.Profiles {
		orig := p.Origin
		if p.From == p.Name { // a built-in: only its elevation follows the file
			orig = p.ElevationLimits.AllowedOrigin
		}
		add(fact{what: "profile", subject: p.Name, value: profileTrust(p), origin: orig, aspect: GainReach, rule: trust})
		for i, r := range p.ReadOnly { // cited at its own entry, as written
			at := Origin{Key: fmt.Sprintf("%s.workspace.readonly[%d]", yamlpos.Join("profiles", p.Name), i)}
			add(fact{what: "readonly", subject: p.Name + " " + r, value: "refused by fetch", origin: at, aspect: GainReach, rule: refuses})
		}
		if p.From != p.Name { // a custom profile: its limits may be its own
			lim := func(what, value string, num float64) {
				o := p.LimitOrigins[what]
				add(fact{what: what, subject: "profile " + p.Name, value: value, origin: o, aspect: GainResources, rule: limit, num: num,
					profile: p.Name, inherited: !strings.HasPrefix(o.Key, "profiles.")})
			}
			lim("memory", p.Memory, memBytes(p.Memory))
			lim("pids", strconv.Itoa(p.Pids), float64(p.Pids))
			lim("cpus", cmp.Or(p.CPUs, noLimit), cpus(cmp.Or(p.CPUs, noLimit)))
			elevationFacts("profile "+p.Name, p.Name, p.ElevationLimits, add)
		}
		if !p.own {
			continue
		}
		for i, a := range p.Admits {
			orig := p.Origin
			if i < len(p.admitOrigins) && p.admitOrigins[i].Key != "" {
				orig = p.admitOrigins[i]
			}
			add(fact{what: "profile destination", subject: p.Name + " " + a, value: "allowed", origin: orig, aspect: GainReach, rule: grants})
		}
	}
	for _, p := range s.Profiles {
		if p.Name == s.DefaultProfile {
			add(fact{what: "default profile", subject: "agentbox up", value: p.Name, origin: s.profileOrigin, aspect: GainReach, rule: defaulted})
		}
	}
}

// defaultKind classifies a change of the default profile by comparing the
// two profiles in full: wider when the new one gains anything.
func defaultKind(base, head *Sandbox, from, to string) string {
	gains, losses := fullGains(base, profileNamed(base, from), head, profileNamed(head, to))
	switch {
	case len(gains) > 0:
		return Widens
	case len(losses) > 0:
		return Narrows
	}
	return Changes
}

// defaultGain says what a change of the default profile gains and loses.
func defaultGain(base, head *Sandbox, from, to string) string {
	if from == "" || to == "" {
		return ""
	}
	gains, losses := fullGains(base, profileNamed(base, from), head, profileNamed(head, to))
	var parts []string
	if len(gains) > 0 {
		parts = append(parts, "gains: "+listed(gains))
	}
	if len(losses) > 0 {
		parts = append(parts, "loses: "+listed(losses))
	}
	return strings.Join(parts, "; ")
}

// listed joins the first few of words, and says how many more there are.
func listed(words []string) string {
	const most = 4
	if len(words) <= most {
		return strings.Join(words, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(words[:most], "; "), len(words)-most)
}

func profileNamed(s *Sandbox, name string) ProfileView {
	for _, p := range s.Profiles {
		if p.Name == name {
			return p
		}
	}
	return ProfileView{}
}

// fullGains is profileGains with what each profile hides (a of base, b
// of head): a file that a hides and b does not is a gain.
func fullGains(base *Sandbox, a ProfileView, head *Sandbox, b ProfileView) (gains, losses []string) {
	gains, losses = profileGains(a, b)
	ha, hb := profileHidden(base, a), profileHidden(head, b)
	seen := map[string]bool{}
	for _, p := range slices.Concat(ha.patterns, hb.patterns) {
		p = strings.TrimPrefix(p, "!")
		if seen[p] {
			continue
		}
		seen[p] = true
		was, is := isHidden(ha.patterns, patternSample(p)), isHidden(hb.patterns, patternSample(p))
		if was && !is {
			gains = append(gains, "files matching "+p+" not hidden")
		} else if is && !was {
			losses = append(losses, "files matching "+p+" hidden")
		}
	}
	return gains, losses
}

// profileGains compares two profiles: what b admits that a does not
// (gains) and the reverse (losses): trust, destinations, limits, and
// agentbox allow's limits.
func profileGains(a, b ProfileView) (gains, losses []string) {
	note := func(cmp int, words string) {
		if cmp > 0 {
			gains = append(gains, words)
		} else if cmp < 0 {
			losses = append(losses, words)
		}
	}
	ta, tb := trustRank(profileTrust(a)), trustRank(profileTrust(b))
	for i := range 3 {
		if i < len(ta) && i < len(tb) {
			note(cmp.Compare(tb[i], ta[i]), trustWord(b, i))
		}
	}
	if b.Network != "open" {
		for _, d := range b.Admits {
			if a.Network != "open" && !slices.Contains(a.Admits, d) {
				note(1, "admits "+d)
			}
		}
	}
	if a.Network != "open" {
		for _, d := range a.Admits {
			if b.Network != "open" && !slices.Contains(b.Admits, d) {
				note(-1, "admits "+d)
			}
		}
	}
	note(cmp.Compare(memBytes(b.Memory), memBytes(a.Memory)), "memory "+b.Memory)
	note(cmp.Compare(b.Pids, a.Pids), "pids "+strconv.Itoa(b.Pids))
	note(cmp.Compare(cpus(b.CPUs), cpus(a.CPUs)), "cpus "+cmp.Or(b.CPUs, noLimit))
	if a.Elevation && b.Elevation {
		note(cmp.Compare(seconds(b.ElevationLimits.MaxDuration), seconds(a.ElevationLimits.MaxDuration)), "grants up to "+b.ElevationLimits.MaxDuration)
		never := func(e ElevationView) []string {
			var out []string
			for _, n := range e.Never {
				out = append(out, n.Entry)
			}
			return out
		}
		na, nb := never(a.ElevationLimits), never(b.ElevationLimits)
		for _, n := range na {
			if !slices.Contains(nb, n) {
				note(1, "allow may grant "+n)
			}
		}
		for _, n := range nb {
			if !slices.Contains(na, n) {
				note(-1, "allow may grant "+n)
			}
		}
	}
	return gains, losses
}

// trustWord is part i (filesystem, network, elevation) of p's trust.
func trustWord(p ProfileView, i int) string {
	words := strings.FieldsFunc(profileTrust(p), func(r rune) bool { return r == ',' })
	return strings.TrimSpace(words[i])
}

// profileTrust says a profile's trust in words that trustRank reads.
func profileTrust(p ProfileView) string {
	fs := "read-write"
	if p.Filesystem == fsLocked {
		fs = "read-only"
	}
	elev := "refused"
	if p.Elevation {
		elev = "permitted"
	}
	return fs + " filesystem, network " + p.Network + ", elevation " + elev
}

// trustRank ranks the parts of a profileTrust value: higher admits more.
func trustRank(v string) []int {
	rank := map[string]int{"read-only": 0, "read-write": 1, "none": 0, "allowlist": 1, "open": 2, "refused": 0, "permitted": 1}
	var out []int
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(" ,()", r) }) {
		if r, ok := rank[w]; ok {
			out = append(out, r)
		}
	}
	return out
}

// profileKind classifies a change of a profile's trust: wider when a part
// admits more (whatever another admits less), narrower when a part admits
// less and none more.
func profileKind(from, to string) string {
	a, b := trustRank(from), trustRank(to)
	wider, narrower := false, false
	for i := range min(len(a), len(b)) {
		switch cmp.Compare(b[i], a[i]) {
		case 1:
			wider = true
		case -1:
			narrower = true
		}
	}
	switch {
	case wider: // admits more in one part: the agent gains, whatever it loses
		return Widens
	case narrower:
		return Narrows
	}
	return Changes
}
