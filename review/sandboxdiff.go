package review

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
)

// The kinds of a DiffRow.
const (
	Widens  = "widens"  // the agent can do more
	Narrows = "narrows" // the agent can do less
	Pinned  = "pin"     // a digest or version moved, its tag or package unchanged
	Changes = "changes" // neither: a different image tag, agent, uid, workspace path
)

// DiffRow is one semantic change between two sandboxes.
type DiffRow struct {
	Kind    string `json:"kind"`    // widens, narrows, pin or changes
	What    string `json:"what"`    // destination, mount, readonly, writable, hidden, memory, pids, cpus, capability, no_new_privs, image, package, agent, uid, gid, git identity, host variable, login copy
	Subject string `json:"subject"` // e.g. "example.com:443", "agent image"
	From    string `json:"from"`    // "" when added
	To      string `json:"to"`      // "" when removed
	Side    string `json:"side"`    // "working" (Key and Line in the working tree's file) or "base"
	// Warning says what a reviewer should know of the row: why a risk is
	// one (supply.go), or that a destination is a public suffix.
	Warning string `json:"warning"` // "" for most rows
	Origin
}

// fact is one thing a sandbox allows or sets, keyed by what and subject.
type fact struct {
	what, subject, value string
	origin               Origin
}

// DiffSandboxes returns the rows that take base to head, sorted: widens,
// narrows, changes, pins. A nil base is a sandbox that did not exist:
// everything in head widens.
func DiffSandboxes(base, head *Sandbox) []DiffRow {
	var rows []DiffRow
	if base == nil {
		for _, f := range facts(head) {
			rows = append(rows, DiffRow{Kind: Widens, What: f.what, Subject: f.subject, To: f.value, Side: "working", Origin: withLine(f.origin, head)})
		}
		return markSuffixes(rows)
	}
	old, cur := index(facts(base)), index(facts(head))
	for _, f := range facts(head) {
		o, had := old[f.what+"\x00"+f.subject]
		switch {
		case !had:
			rows = appendKind(rows, added(f, base), f, fact{}, base, head)
		case o.value != f.value:
			rows = appendKind(rows, changed(o, f), f, o, base, head)
		}
	}
	for _, o := range facts(base) {
		if _, has := cur[o.what+"\x00"+o.subject]; !has {
			rows = appendKind(rows, removed(o, head), fact{}, o, base, head)
		}
	}
	rows = append(markSuffixes(markRisks(rows)), supplyRows(base, head)...)
	slices.SortStableFunc(rows, compareRows)
	return rows
}

// appendKind adds a row unless kind is "". It cites the working tree's
// file where the key is written there, else the base's: a removed fact, or
// a key removed from the file.
func appendKind(rows []DiffRow, kind string, to, from fact, base, head *Sandbox) []DiffRow {
	if kind == "" {
		return rows
	}
	f, side, orig := to, "working", withLine(to.origin, head)
	if to.what == "" {
		f = from
	}
	if orig.Line == 0 && from.what != "" {
		if o := withLine(from.origin, base); o.Line != 0 {
			side, orig = "base", o
		}
	}
	if orig.Line == 0 {
		orig = withLine(f.origin, head)
	}
	if f.what == "destination" {
		if o, ok := portsOrigin(f.subject, side, base, head); ok {
			orig = o
		}
	}
	return append(rows, DiffRow{Kind: kind, What: f.what, Subject: f.subject, From: from.value, To: to.value, Side: side, Origin: orig})
}

// portsOrigin: a port that a destination on both sides gained or lost
// through network.ports is caused by network.ports.
func portsOrigin(subject, side string, base, head *Sandbox) (Origin, bool) {
	name, _, ok := strings.Cut(subject, " port ")
	if !ok {
		name, _, _ = strings.Cut(subject, ":")
	}
	d, inBase := destination(base, name)
	h, inHead := destination(head, name)
	if !inBase || !inHead || !d.defaultPorts || !h.defaultPorts {
		return Origin{}, false
	}
	s := head
	if side == "base" {
		s = base
	}
	o := withLine(Origin{Key: "network.ports"}, s)
	return o, o.Line != 0
}

func destination(s *Sandbox, name string) (Destination, bool) {
	for _, d := range append(slices.Clone(s.Network.Domains), s.Network.CIDRs...) {
		if d.Name == name {
			return d, true
		}
	}
	return Destination{}, false
}

// withLine fills in the line of o's key in s when o has none.
func withLine(o Origin, s *Sandbox) Origin {
	if o.Line == 0 && o.Key != "" {
		o.Line = s.lines[o.Key]
	}
	return o
}

var kindOrder = map[string]int{Risk: -1, Widens: 0, Narrows: 1, Changes: 2, Pinned: 3}

func compareRows(a, b DiffRow) int {
	return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(a.Line, b.Line),
		strings.Compare(a.What, b.What), strings.Compare(a.Subject, b.Subject))
}

func index(fs []fact) map[string]fact {
	m := make(map[string]fact, len(fs))
	for _, f := range fs {
		m[f.what+"\x00"+f.subject] = f
	}
	return m
}

// facts flattens a sandbox into keyed facts.
func facts(s *Sandbox) []fact {
	var fs []fact
	add := func(what, subject, value string, o Origin) { fs = append(fs, fact{what, subject, value, o}) }
	for _, d := range s.Network.Domains {
		for _, p := range d.Ports {
			add("destination", d.Name+":"+strconv.Itoa(int(p)), "allowed", d.Origin)
		}
	}
	for _, c := range s.Network.CIDRs {
		for _, p := range c.Ports {
			add("destination", c.Name+" port "+strconv.Itoa(int(p)), "allowed", c.Origin)
		}
	}
	for _, m := range s.Filesystem.Mounts {
		add("mount", m.Type+" "+m.Source, m.Mode+" "+m.Target, m.Origin)
	}
	for _, r := range s.Filesystem.ReadOnly {
		add("readonly", r.Path, "refused by fetch", r.Origin)
	}
	for _, r := range s.Filesystem.Writable {
		add("writable", r.Path, "accepted by fetch", r.Origin)
	}
	for _, r := range s.Filesystem.Hidden {
		add("hidden", r.Path, "pattern", r.Origin)
	}
	pr := s.Privileges
	for _, c := range pr.Capabilities {
		add("capability", c, "granted", Origin{})
	}
	add("no_new_privs", "agent", strconv.FormatBool(pr.NoNewPrivs), Origin{})
	add("memory", "agent", pr.Memory, pr.keys["memory"])
	add("pids", "agent", strconv.Itoa(pr.Pids), pr.keys["pids"])
	add("cpus", "agent", cmp.Or(pr.CPUs, noLimit), pr.keys["cpus"])
	add("uid", "agent", strconv.Itoa(pr.UID), pr.keys["uid"])
	add("gid", "agent", strconv.Itoa(pr.GID), pr.keys["gid"])
	add("agent", "agent", s.Agent, pr.keys["agent"])
	add("git identity", "agent's commits", s.Git.Name+" <"+s.Git.Email+">", s.Git.Origin)
	for _, p := range s.Pins {
		what, subject, v := p.Kind, p.What, p.Name+"@"+p.Digest
		switch p.Kind {
		case "image":
			v = p.Name + ":" + p.Tag + "@" + p.Digest
		case "debian":
			subject = p.Tag + " " + p.Name
		}
		add(what, subject, v, p.Origin)
	}
	profileFacts(s, add)
	credentialFacts(s, add)
	return fs
}

// added classifies a fact that base lacks.
func added(f fact, base *Sandbox) string {
	switch f.what {
	case "destination":
		if covered(f.subject, base) {
			return ""
		}
		return Widens
	case "readonly":
		return Narrows
	case "hidden":
		return hiddenKind(f.subject, true)
	case "default profile":
		return Changes
	}
	return Widens
}

// removed classifies a fact that head lacks.
func removed(f fact, head *Sandbox) string {
	switch f.what {
	case "destination":
		if covered(f.subject, head) {
			return ""
		}
		return Narrows
	case "readonly":
		return Widens
	case "hidden":
		if strings.HasPrefix(f.subject, "!") && !slices.ContainsFunc(head.Filesystem.Hidden, func(r PathRule) bool { return !strings.HasPrefix(r.Path, "!") }) {
			return "" // nothing is hidden any more: there is nothing to take back out
		}
		return hiddenKind(f.subject, false)
	}
	return Narrows
}

// hiddenKind: a pattern hides more when added, a "!" pattern less.
func hiddenKind(pattern string, add bool) string {
	if add == strings.HasPrefix(pattern, "!") {
		return Widens
	}
	return Narrows
}

// changed classifies a fact whose value differs.
func changed(from, to fact) string {
	switch to.what {
	case "memory":
		return limitKind(memBytes(from.value), memBytes(to.value))
	case "pids":
		a, _ := strconv.ParseFloat(from.value, 64)
		b, _ := strconv.ParseFloat(to.value, 64)
		return limitKind(a, b)
	case "cpus":
		return limitKind(cpus(from.value), cpus(to.value))
	case "profile":
		return profileKind(from.value, to.value)
	case "default profile":
		if before(from.value, " (") == before(to.value, " (") {
			return "" // the same profile, whose own row says how it changed
		}
		_, a, _ := strings.Cut(from.value, " (")
		_, b, _ := strings.Cut(to.value, " (")
		return profileKind(a, b)
	case "host variable":
		if to.value == ReachesAll {
			return Widens // from tasks alone to the sandbox too
		}
		return Narrows
	case "no_new_privs":
		if to.value == "false" {
			return Widens
		}
		return Narrows
	case "mount":
		if strings.HasPrefix(to.value, "rw") && strings.HasPrefix(from.value, "ro") {
			return Widens
		}
		if strings.HasPrefix(to.value, "ro") && strings.HasPrefix(from.value, "rw") {
			return Narrows
		}
	case "image", "package", "tree", "debian", "snapshot":
		if before(from.value, "@") == before(to.value, "@") {
			return Pinned
		}
	}
	return Changes
}

// before is s up to its last sep: an image without its digest, a package
// ("@scope/name@1.2.3") without its version.
func before(s, sep string) string { return s[:max(strings.LastIndex(s, sep), 0)] }

// noLimit is the value of a limit that is not set.
const noLimit = "no limit"

func limitKind(from, to float64) string {
	switch {
	case to > from:
		return Widens
	case to < from:
		return Narrows
	}
	return Changes
}

func memBytes(s string) float64 {
	return float64((&config.Config{Memory: s}).MemoryBytes())
}

// cpus is a CPU limit; no limit is infinite.
func cpus(s string) float64 {
	if s == noLimit {
		return 1e18
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// covered reports whether s already admits a destination subject: a name
// below a listed one with the port, or an address range inside a listed
// prefix with the port.
func covered(subject string, s *Sandbox) bool {
	if prefix, port, ok := strings.Cut(subject, " port "); ok {
		p, err := netip.ParsePrefix(prefix)
		return err == nil && slices.ContainsFunc(s.Network.CIDRs, func(d Destination) bool {
			q, err := netip.ParsePrefix(d.Name)
			return err == nil && q.Bits() <= p.Bits() && q.Contains(p.Addr()) && hasPort(d.Ports, port)
		})
	}
	name, port, _ := strings.Cut(subject, ":")
	return slices.ContainsFunc(s.Network.Domains, func(d Destination) bool {
		return (name == d.Name || strings.HasSuffix(name, "."+d.Name)) && hasPort(d.Ports, port)
	})
}

func hasPort(ports []uint16, port string) bool {
	return slices.ContainsFunc(ports, func(p uint16) bool { return fmt.Sprint(p) == port })
}
