package review

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
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
	Hidden     []string `json:"hidden"`   // the profile's workspace.hidden, on top of the top-level one
	Compose    string   `json:"compose"`  // its compose file
	Origin
	own bool // its network is its own (profiles.NAME.network), not the top-level one
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
// say it once), and the default.
func profileFacts(s *Sandbox, add func(what, subject, value string, o Origin)) {
	for _, p := range s.Profiles {
		add("profile", p.Name, profileTrust(p), p.Origin)
		for _, r := range p.ReadOnly {
			add("readonly", p.Name+" "+r, "refused by fetch", p.Origin)
		}
		for _, h := range p.Hidden {
			add("hidden", p.Name+" "+h, "pattern", p.Origin)
		}
		if !p.own {
			continue
		}
		for _, a := range p.Admits {
			add("profile destination", p.Name+" "+a, "allowed", p.Origin)
		}
	}
	for _, p := range s.Profiles {
		if p.Name == s.DefaultProfile {
			add("default profile", "agentbox up", p.Name+" ("+profileTrust(p)+")", Origin{Key: "profile"})
		}
	}
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
// admits more and none less, narrower when the other way round.
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
	case wider && !narrower:
		return Widens
	case narrower && !wider:
		return Narrows
	}
	return Changes
}
