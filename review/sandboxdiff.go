package review

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// The kinds of a DiffRow.
const (
	Widens  = "widens"  // the agent can do more
	Narrows = "narrows" // the agent can do less
	Pinned  = "pin"     // a digest or version moved, its tag or package unchanged
	Changes = "changes" // neither: a different image tag, agent, uid, workspace path
)

// The aspects of a DiffRow: what the agent gains (or loses).
const (
	GainReach     = "reach"     // destinations, mounts, what fetch takes back, what is hidden, what allow may grant
	GainTime      = "time"      // how long a task or a grant may last
	GainResources = "resources" // memory, processes, CPUs
	GainSecrets   = "secrets"   // the host's variables, the login, where credentials go
	GainCode      = "code"      // code that runs in the sandbox beside the agent's own
	GainTrust     = "trust"     // the build's inputs: images, packages, their pins; the profile's trust
	GainNone      = "none"      // nothing the agent can do: a name, an identity
)

// DiffRow is one semantic change between two sandboxes.
type DiffRow struct {
	Kind    string `json:"kind"`    // widens, narrows, pin or changes
	Aspect  string `json:"aspect"`  // reach, time, resources, secrets, code, trust or none
	What    string `json:"what"`    // destination, mount, env, timeout, ...
	Subject string `json:"subject"` // e.g. "example.com:443", "agent image"
	From    string `json:"from"`    // "" when added
	To      string `json:"to"`      // "" when removed
	Gain    string `json:"gain"`    // what the change lets the agent do, where there are words for it, else ""
	Side    string `json:"side"`    // "working" (Key and Line in the working tree's file) or "base"
	// Warning says what a reviewer should know of the row: why a risk is
	// one (supply.go), or that a destination is a public suffix.
	Warning string `json:"warning"` // "" for most rows
	Origin
}

// rule is how a fact's change is classified: by what the agent gains,
// never by the fact's name.
type rule int

const (
	grants    rule = iota // present: the agent may do it (added widens, removed narrows)
	refuses               // present: the agent may not (added narrows, removed widens)
	limit                 // num is an amount: more widens, less narrows, equal is no change
	runs                  // code or trust: added or changed widens, removed narrows
	pinned                // a pinned input: pinKind
	neutral               // any change is a change, neither wider nor narrower
	trust                 // a profile's trust words: profileKind
	reaches               // a destination: grants, unless the other side covers it
	mounted               // a mount: its mode decides
	defaulted             // the default profile: its profile is compared in full
)

// fact is one thing a sandbox allows or sets, keyed by what and subject.
type fact struct {
	what, subject, value string
	origin               Origin
	lockKey              string // a pin's key in agentbox.lock
	aspect               string
	rule                 rule
	num                  float64 // limit: the amount, higher admits more
	gain                 string  // what it lets the agent do, when known
	// profile names the profile of a fact that is one profile's own: it is
	// compared only while the profile exists on both sides (the profile's
	// own row says it was added or removed); inherited says the profile
	// takes the top-level value, whose row says its change.
	profile   string
	inherited bool
}

// DiffSandboxes returns the rows that take base to head, sorted: widens,
// narrows, changes, pins. A nil base is a sandbox that did not exist:
// everything in head widens.
func DiffSandboxes(base, head *Sandbox) []DiffRow {
	var rows []DiffRow
	if base == nil {
		for _, f := range facts(head) {
			rows = append(rows, DiffRow{Kind: Widens, Aspect: f.aspect, What: f.what, Subject: f.subject, To: f.value, Gain: f.gain, Side: "working", Origin: withLine(f.origin, head)})
		}
		for _, h := range head.Filesystem.Hidden {
			rows = append(rows, DiffRow{Kind: Widens, Aspect: GainReach, What: "hidden", Subject: h.Path, To: h.Effect, Side: "working", Origin: withLine(h.Origin, head)})
		}
		return markSuffixes(rows)
	}
	old, cur := index(facts(base)), index(facts(head))
	for _, f := range facts(head) {
		o, had := old[f.what+"\x00"+f.subject]
		switch {
		case !had:
			if f.profile == "" || hasProfile(base, f.profile) {
				rows = appendKind(rows, added(f, base, head), f, fact{}, base, head)
			}
		case o.value != f.value && !(o.inherited && f.inherited):
			rows = appendKind(rows, changed(o, f, base, head), f, o, base, head)
		}
	}
	for _, o := range facts(base) {
		if _, has := cur[o.what+"\x00"+o.subject]; !has && (o.profile == "" || hasProfile(head, o.profile)) {
			rows = appendKind(rows, removed(o, head), fact{}, o, base, head)
		}
	}
	rows = append(rows, hiddenRows(base, head)...)
	rows = append(markSuffixes(markRisks(rows)), supplyRows(base, head)...)
	slices.SortStableFunc(rows, compareRows)
	return rows
}

func hasProfile(s *Sandbox, name string) bool {
	return slices.ContainsFunc(s.Profiles, func(p ProfileView) bool { return p.Name == name })
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
	if f.what == "profile destination" {
		if o, ok := profilePortsOrigin(f.subject, side, base, head); ok {
			orig = o
		}
	}
	if o, s, ok := lockOrigin(kind, f, to.what == "", base, head); ok {
		orig, side = o, s
	}
	gain := to.gain
	if kind == Narrows {
		gain = "" // the words say what a variable can do: the side that has it
	}
	if kind == Widens && gain == "" {
		gain = from.gain
	}
	if f.rule == defaulted {
		gain = defaultGain(base, head, from.value, to.value)
	}
	return append(rows, DiffRow{Kind: kind, Aspect: f.aspect, What: f.what, Subject: f.subject, From: from.value, To: to.value, Gain: gain, Side: side, Origin: orig})
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
	return yamlAt("network.ports", side, base, head)
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
	return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line),
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
	add := func(f fact) { fs = append(fs, f) }
	networkFacts(s, add)
	filesystemFacts(s, add)
	privilegeFacts(s, add)
	pinFacts(s, add)
	envFacts(s, add)
	timeFacts(s, add)
	elevationFacts("agentbox allow", "", s.Elevation, add)
	devcontainerFacts(s, add)
	profileFacts(s, add)
	credentialFacts(s, add)
	forgeFacts(s, add)
	return fs
}

// pinFacts are the pins: each image, the agent CLI and its tree, each
// Debian package and the snapshots.
func pinFacts(s *Sandbox, add func(fact)) {
	for _, p := range s.Pins {
		what, subject, v := p.Kind, p.What, p.Name+"@"+p.Digest
		switch p.Kind {
		case "image":
			v = p.Name + ":" + p.Tag + "@" + p.Digest
		case "debian":
			subject = p.Tag + " " + p.Name
		}
		add(fact{what: what, subject: subject, value: v, origin: p.Origin, lockKey: p.LockKey, aspect: GainTrust, rule: pinned})
	}
}

// pinKind classifies a pin whose value moved: the same image or package at
// another digest or version is a pin.
func pinKind(from, to fact) string {
	if before(from.value, "@") == before(to.value, "@") {
		return Pinned
	}
	return Changes
}

// added classifies a fact that base lacks.
func added(f fact, base, head *Sandbox) string {
	switch f.rule {
	case trust: // a new profile widens unless one of base's already grants all it does
		p := profileNamed(head, f.subject)
		for _, b := range base.Profiles {
			if gains, _ := fullGains(base, b, head, p); len(gains) == 0 {
				return Changes
			}
		}
		return Widens
	case reaches:
		if covered(f.subject, base) {
			return ""
		}
		return Widens
	case refuses:
		return Narrows
	case neutral, defaulted:
		return Changes
	}
	return Widens
}

// removed classifies a fact that head lacks.
func removed(f fact, head *Sandbox) string {
	switch f.rule {
	case reaches:
		if covered(f.subject, head) {
			return ""
		}
		return Narrows
	case refuses:
		return Widens
	case neutral:
		return Changes
	}
	return Narrows
}

// changed classifies a fact whose value differs.
func changed(from, to fact, base, head *Sandbox) string {
	switch to.rule {
	case limit:
		return limitKind(from.num, to.num)
	case trust:
		return profileKind(from.value, to.value)
	case defaulted:
		return defaultKind(base, head, from.value, to.value)
	case runs:
		if to.gain == "" && from.gain != "" {
			return Narrows // back to a value that gains nothing (the catalog's)
		}
		return Widens
	case mounted:
		if strings.HasPrefix(to.value, "rw") && strings.HasPrefix(from.value, "ro") {
			return Widens
		}
		if strings.HasPrefix(to.value, "ro") && strings.HasPrefix(from.value, "rw") {
			return Narrows
		}
	case pinned:
		return pinKind(from, to)
	}
	return Changes
}

// before is s up to its last sep: an image without its digest, a package
// ("@scope/name@1.2.3") without its version.
func before(s, sep string) string { return s[:max(strings.LastIndex(s, sep), 0)] }

// noLimit is the value of a limit that is not set.
const noLimit = "no limit"

// limitKind: more widens, less narrows, the same amount written otherwise
// (4g, 4096m) is no change.
func limitKind(from, to float64) string {
	switch {
	case to > from:
		return Widens
	case to < from:
		return Narrows
	}
	return ""
}

func memBytes(s string) float64 {
	return float64((&config.Config{Memory: s}).MemoryBytes())
}

// cpus is a CPU limit; no limit is infinite.
func cpus(s string) float64 {
	if s == noLimit || s == "" {
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

// lockOrigin cites agentbox.lock for a pin that moved while its choice in
// agentbox.yaml did not (the same image, package or snapshot at another
// digest or version: kind Pinned, which a downgrade turns into a risk
// later), or that agentbox.yaml does not name: the lock's line is where
// the change is, and the line a pull request shows.
//
// A removed pin cites the base's lock (side "base").
func lockOrigin(kind string, f fact, removed bool, base, head *Sandbox) (o Origin, side string, ok bool) {
	if f.rule != pinned || f.lockKey == "" || kind != Pinned && withLine(f.origin, head).Line != 0 {
		return Origin{}, "", false
	}
	side = "working"
	if removed {
		side = "base"
	}
	o, ok = lockAt(f.lockKey, side, base, head)
	return o, side, ok
}

// onSide is the sandbox of side: base's for "base", else head's.
func onSide(side string, base, head *Sandbox) *Sandbox {
	if side == "base" {
		return base
	}
	return head
}

// yamlAt is key of agentbox.yaml on side, with its line; ok when it is
// written there.
func yamlAt(key, side string, base, head *Sandbox) (Origin, bool) {
	o := withLine(Origin{Key: key}, onSide(side, base, head))
	return o, o.Line != 0
}

// lockAt is key of agentbox.lock on side, with its line; ok when it is
// written there.
func lockAt(key, side string, base, head *Sandbox) (Origin, bool) {
	line := onSide(side, base, head).lockLines[key]
	return Origin{File: lockfile.File, Key: key, Line: line}, line != 0
}
