// Package denials reads the egress container's log and aggregates what the
// sandbox refused: the names the DNS filter answered NXDOMAIN (one row per
// name), the firewall's per-packet records of refused connections (one row
// per destination) and its reject counters. It runs no Docker and prints
// nothing. Names are kept as logged, whatever bytes they hold (a Why may
// quote one): escape them to print them (internal/termsafe).
package denials

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits that bound Parse's memory whatever the log holds.
const (
	MaxNames   = 10000    // distinct names kept; refusals of the rest count in Report.Dropped
	MaxLine    = 64 << 10 // longer lines are skipped (Report.Skipped)
	maxTypes   = 16       // query types kept per name
	maxPending = 64       // dnsmasq processes whose last query is remembered
	whyName    = "unlisted name"
)

// Row is one refused name.
type Row struct {
	Name  string    `json:"name"` // ASCII letters lower-cased, other bytes as logged
	Count int       `json:"count"`
	First time.Time `json:"first_seen"` // zero when the log had no timestamps
	Last  time.Time `json:"last_seen"`
	Types []string  `json:"types"` // query types (A, AAAA, ...), sorted
	Why   string    `json:"why"`   // "unlisted name"
}

// Report is what an egress log says was refused.
type Report struct {
	Rows []Row // by count (most first), then name
	// Packets are the non-zero reject counters of the last
	// "rejected packets:" line (egress writes it as it stops).
	Packets map[string]int
	Dropped int // refusals of names beyond MaxNames
	Skipped int // lines longer than MaxLine
	// Dests are the refused destinations of the firewall's per-packet
	// records (with the Packets option), by count (most first), then
	// address, port, protocol.
	Dests          []Dest
	DroppedPackets int // records of destinations beyond MaxDests
	BadRecords     int // records with the firewall's prefix that do not parse
}

// Option changes what Parse counts.
type Option func(*parser)

// Since counts only lines logged at t or later. A line without a timestamp
// cannot be dated, so with Since it is not counted.
func Since(t time.Time) Option { return func(p *parser) { p.since = t } }

// Ignore leaves names out of the report (the entrypoint's own probe).
func Ignore(names ...string) Option {
	return func(p *parser) {
		for _, n := range names {
			p.ignore[lowerASCII(n)] = true
		}
	}
}

var (
	queryLine   = regexp.MustCompile(`^dnsmasq\[([0-9]+)\]: query\[([A-Za-z0-9]{1,16})\] (.+) from \S+$`)
	refusedLine = regexp.MustCompile(`^dnsmasq\[([0-9]+)\]: config (.+) is NXDOMAIN$`)
	rejectLine  = regexp.MustCompile(`^agentbox-egress: rejected packets:((?: [a-z0-9_]+=[0-9]+)+)$`)
	// composePrefix is docker compose's "egress-1  | " before each line,
	// when --no-log-prefix was not given.
	composePrefix = regexp.MustCompile(`^[A-Za-z0-9._-]+ +\| `)
)

type query struct{ qtype, name string }

type parser struct {
	since     time.Time
	logPrefix string            // Packets: the firewall's log prefix
	reasons   map[string]string // Packets: its keys and what they mean
	dests     map[destKey]*Dest
	ignore    map[string]bool
	rows      map[string]*Row
	pending   map[string]query // by dnsmasq pid: its last query
	rep       Report
	unlisted  string                // Ports: the firewall's key for TCP to an unlisted address or port
	special   string                // Ports: its key for a private or special-purpose range
	cidrs     []netip.Prefix        // Ports: the policy's CIDRs
	answers   map[netip.Addr]string // the resolver's answers: address -> name
}

// Parse reads an egress log, as `docker logs --timestamps` writes it (lines
// without a timestamp are read too), and aggregates its refusals.
func Parse(r io.Reader, opts ...Option) (*Report, error) {
	p := &parser{ignore: map[string]bool{}, rows: map[string]*Row{}, pending: map[string]query{}, dests: map[destKey]*Dest{}}
	p.rep.Packets = map[string]int{}
	for _, o := range opts {
		o(p)
	}
	br := bufio.NewReaderSize(r, MaxLine+1)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			p.rep.Skipped++
			if err = skipLine(br); err == io.EOF {
				break
			}
		} else if len(line) > 0 {
			p.line(strings.TrimRight(string(line), "\r\n"))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the egress log: %w", err)
		}
	}
	return p.report(), nil
}

// skipLine reads past the rest of a line too long to keep.
func skipLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// line counts one line of the log.
func (p *parser) line(l string) {
	l = composePrefix.ReplaceAllString(l, "")
	at, rest := timestamp(l)
	// An answer counts whenever it came: a refusal after --since may be
	// of an address resolved before.
	if p.unlisted != "" && p.answer(rest) {
		return
	}
	if !p.since.IsZero() && (at.IsZero() || at.Before(p.since)) {
		return
	}
	if p.logPrefix != "" && strings.HasPrefix(rest, "{") {
		p.record(rest, at)
		return
	}
	if m := queryLine.FindStringSubmatch(rest); m != nil {
		if _, ok := p.pending[m[1]]; !ok && len(p.pending) >= maxPending {
			clear(p.pending)
		}
		p.pending[m[1]] = query{strings.ToUpper(m[2]), lowerASCII(m[3])}
		return
	}
	if m := refusedLine.FindStringSubmatch(rest); m != nil {
		name := lowerASCII(m[2])
		qtype := ""
		if q, ok := p.pending[m[1]]; ok && q.name == name {
			qtype = q.qtype
		}
		p.refused(name, qtype, at)
		return
	}
	if m := rejectLine.FindStringSubmatch(rest); m != nil {
		clear(p.rep.Packets) // the last line counts: counters only grow
		for _, kv := range strings.Fields(m[1]) {
			k, v, _ := strings.Cut(kv, "=")
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				p.rep.Packets[k] = n
			}
		}
	}
}

// refused counts one refusal of name.
func (p *parser) refused(name, qtype string, at time.Time) {
	if p.ignore[name] {
		return
	}
	r, ok := p.rows[name]
	if !ok {
		if len(p.rows) >= MaxNames {
			p.rep.Dropped++
			return
		}
		r = &Row{Name: name, Why: whyName, First: at}
		p.rows[name] = r
	}
	r.Count++
	if !at.IsZero() && (r.First.IsZero() || at.Before(r.First)) {
		r.First = at
	}
	if at.After(r.Last) {
		r.Last = at
	}
	if qtype != "" && !slices.Contains(r.Types, qtype) && len(r.Types) < maxTypes {
		r.Types = append(r.Types, qtype)
		slices.Sort(r.Types)
	}
}

func (p *parser) report() *Report {
	rep := p.rep
	rep.Dests = p.sortedDests()
	rep.Rows = make([]Row, 0, len(p.rows))
	for _, r := range p.rows {
		rep.Rows = append(rep.Rows, *r)
	}
	slices.SortFunc(rep.Rows, func(a, b Row) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Name, b.Name)
	})
	return &rep
}

// timestamp splits Docker's RFC 3339 prefix ("2026-11-22T19:08:27.1Z ")
// off a line; a line without one has a zero time.
func timestamp(l string) (time.Time, string) {
	first, rest, ok := strings.Cut(l, " ")
	if !ok || len(first) < len("2006-01-02T15:04:05Z") || first[0] < '0' || first[0] > '9' {
		return time.Time{}, l
	}
	t, err := time.Parse(time.RFC3339Nano, first)
	if err != nil {
		return time.Time{}, l
	}
	return t, rest
}

// lowerASCII lower-cases ASCII letters only: DNS names compare that way,
// and other bytes stay as they were.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
