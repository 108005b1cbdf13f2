package egress

import (
	"cmp"
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/connlog"
	"github.com/agentbox-dev/agentbox/internal/denials"
	"github.com/agentbox-dev/agentbox/internal/shquote"
	"github.com/agentbox-dev/agentbox/sandbox"
)

// LogSource opens the egress log (with Docker's timestamps) of the sandbox
// in dir, or of its task when task is not empty, from since on when since
// is not zero (sandbox.EgressLog is the real one).
type LogSource func(ctx context.Context, dir, task string, since time.Time) (io.ReadCloser, error)

// Blocked is what the sandbox refused, as agentbox blocked prints it
// (--json: this shape, documented in docs/firewall.md). Names and whys hold
// the egress log's names as logged: escape them to print them.
type Blocked struct {
	Names           []BlockedName           `json:"names"`
	Addresses       []BlockedDest           `json:"addresses"`
	Gateway         []BlockedGateway        `json:"gateway"`
	GatewayDropped  int                     `json:"gateway_dropped_records"` // the gateway's records of any verdict the rate limit dropped
	GatewayBad      int                     `json:"gateway_bad_records"`
	Packets         map[string]int          `json:"rejected_packets"`
	Dropped         int                     `json:"dropped_refusals"`
	DroppedRecords  int                     `json:"dropped_records"`
	BadRecords      int                     `json:"bad_records"`
	Skipped         int                     `json:"skipped_lines"`
	Suggestions     []BlockedSuggestion     `json:"suggestions,omitempty"`
	CIDRSuggestions []BlockedCIDRSuggestion `json:"cidr_suggestions,omitempty"`
	LeftOut         []string                `json:"left_out,omitempty"`   // refused, agentbox's own probes: never suggested
	PolicyAdd       string                  `json:"policy_add,omitempty"` // the command that applies Suggestions
	LogRate         int                     `json:"-"`                    // the firewall's records a second, at most
}

// BlockedDest is a refused destination; times are null when the record
// had none.
type BlockedDest struct {
	Address  string     `json:"address"`
	Port     uint16     `json:"port"`
	Protocol string     `json:"protocol"`
	Count    int        `json:"count"`
	First    *time.Time `json:"first_seen"`
	Last     *time.Time `json:"last_seen"`
	Reason   string     `json:"reason"`
	Why      string     `json:"why"`
}

// BlockedGateway is the connections the gateway refused with one name
// (its SNI or Host; "" when they named none) on one port for one reason.
// Name is the agent's, as sent: escape it to print it.
type BlockedGateway struct {
	Name   string     `json:"name"`
	Port   int        `json:"port"`
	Count  int        `json:"count"`
	First  *time.Time `json:"first_seen"`
	Last   *time.Time `json:"last_seen"`
	Reason string     `json:"reason"` // connlog's reason: name, no_name, protocol, timeout, unresolved, other
	Why    string     `json:"why"`
}

// BlockedCIDRSuggestion is a network.cidrs entry that would allow refused
// connections.
type BlockedCIDRSuggestion struct {
	denials.CIDRSuggestion
	Line    string `json:"line"`
	Command string `json:"policy_add"` // the command that applies it
}

// BlockedName is a name the DNS filter refused.
type BlockedName struct {
	Name  string     `json:"name"`
	Count int        `json:"count"`
	First *time.Time `json:"first_seen"` // null: the log line had no timestamp
	Last  *time.Time `json:"last_seen"`
	Types []string   `json:"types"`
	Why   string     `json:"why"`
}

// BlockedSuggestion is a network.domains entry that would allow refused
// names.
type BlockedSuggestion struct {
	denials.Suggestion
	Line string `json:"line"`
}

// BlockedIn is what the sandbox in dir (task "") or its task refused: its
// egress log, opened by open from since on when since is not zero, read by
// ReadBlocked with the project's agentbox.yaml when it loads. stale says
// that the running sandbox predates the generated files (sandbox.Stale; a
// task's is not judged), and holds also with an error.
func BlockedIn(ctx context.Context, open LogSource, dir, task string, since time.Time, suggest bool) (v *Blocked, stale bool, err error) {
	log, err := open(ctx, dir, task, since)
	if err != nil {
		return nil, false, err
	}
	cfg, _ := sandbox.LoadConfig(dir) // without it, only the resolver's answers tell a port from an address
	stale = cfg != nil && task == "" && sandbox.Stale(ctx, "", dir, cfg.Name)
	v, err = ReadBlocked(log, cfg, since, suggest)
	return v, stale, err
}

// ReadBlocked reads the egress log (with Docker's timestamps), from since
// on when since is not zero, and closes it. cfg, when not nil, tells a
// port's refusal from an address's and names verify's targets; suggest
// adds the agentbox.yaml entries that would allow what was refused.
func ReadBlocked(log io.ReadCloser, cfg *config.Config, since time.Time, suggest bool) (*Blocked, error) {
	opts := []denials.Option{denials.Ignore(firewall.ProbeName), denials.Packets(firewall.LogPrefix, firewall.LogReasons),
		denials.Ports(firewall.ReasonUnlisted, firewall.ReasonSpecial, cfg.CIDRPrefixes())}
	if !since.IsZero() {
		opts = append(opts, denials.Since(since))
	}
	// One read of the log: the gateway's records beside.
	tee, parsed := connlog.Beside(log, since)
	rep, err := denials.Parse(tee, opts...)
	conns := parsed(err)
	if cerr := log.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	v := newBlocked(rep, suggest, probedTargets(cfg))
	if conns != nil {
		v.Gateway, v.GatewayDropped, v.GatewayBad = gatewayRefusals(conns.Connections), conns.Dropped, conns.BadRecords
	}
	return v, nil
}

// gatewayRefusals are the refused records by name, port and reason, most
// first, at most denials.MaxNames of them (the rest in the last row, with
// the reason "more").
func gatewayRefusals(recs []connlog.Record) []BlockedGateway {
	type key struct {
		name   string
		port   int
		reason string
	}
	rows := map[key]*BlockedGateway{}
	for _, r := range recs {
		if r.Verdict != connlog.Refused {
			continue
		}
		k := key{r.Name, r.Port, r.Reason}
		g, ok := rows[k]
		if !ok {
			if len(rows) >= denials.MaxNames {
				k = key{reason: "more"}
				if g, ok = rows[k]; !ok {
					g = &BlockedGateway{Reason: "more", Why: "refusals beyond the first rows, not listed apart"}
					rows[k] = g
				}
			} else {
				g = &BlockedGateway{Name: r.Name, Port: r.Port, Reason: r.Reason, Why: r.Why}
				rows[k] = g
			}
		}
		g.Count++
		at := r.Start.UTC()
		if g.First == nil || at.Before(*g.First) {
			g.First = &at
		}
		if g.Last == nil || at.After(*g.Last) {
			last := at
			g.Last = &last
		}
	}
	out := []BlockedGateway{}
	for _, g := range rows {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b BlockedGateway) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port),
			cmp.Compare(a.Reason, b.Reason))
	})
	return out
}

func newBlocked(rep *denials.Report, suggest bool, probed probes) *Blocked {
	v := &Blocked{Names: []BlockedName{}, Addresses: blockedDests(rep.Dests), Packets: rep.Packets,
		Dropped: rep.Dropped, DroppedRecords: rep.DroppedPackets, BadRecords: rep.BadRecords, Skipped: rep.Skipped,
		LogRate: firewall.LogRate}
	for _, r := range rep.Rows {
		n := BlockedName{Name: r.Name, Count: r.Count, Types: r.Types, Why: r.Why}
		if n.Types == nil {
			n.Types = []string{}
		}
		n.First, n.Last = timeRange(r.First, r.Last)
		v.Names = append(v.Names, n)
	}
	if suggest {
		rows, dests, left := probed.leaveOut(rep.Rows, rep.Dests)
		v.Suggestions = []BlockedSuggestion{}
		add := []string{"agentbox", "policy", "add"}
		for _, s := range denials.Suggest(rows) {
			v.Suggestions = append(v.Suggestions, BlockedSuggestion{s, s.Line()})
			add = append(add, s.Domain)
		}
		if len(v.Suggestions) > 0 {
			v.PolicyAdd = shquote.Words(add)
		}
		v.CIDRSuggestions = []BlockedCIDRSuggestion{}
		for _, s := range denials.SuggestCIDRs(dests, firewall.ReasonUnlisted) {
			cmd := shquote.Words([]string{"agentbox", "policy", "add", s.CIDR, "--ports", PortArg(s.Ports)})
			v.CIDRSuggestions = append(v.CIDRSuggestions, BlockedCIDRSuggestion{s, s.Line(), cmd})
		}
		v.LeftOut = left
	}
	return v
}

// probes are the names and destinations agentbox itself probes, which the
// firewall refuses as it should: the entrypoint's name, and the targets of
// verify under every profile.
type probes struct {
	names map[string]bool
	dests map[netip.AddrPort]bool
}

// probedTargets returns what agentbox probes for cfg: verify's defaults
// always (cfg may be nil, or have been edited since the probes ran), and
// the targets of each of cfg's profiles.
func probedTargets(cfg *config.Config) probes {
	p := probes{names: map[string]bool{firewall.ProbeName: true}, dests: map[netip.AddrPort]bool{}}
	targets := []config.Verify{{
		UnlistedAddress: config.DefaultUnlistedAddress, Resolver: config.DefaultResolver,
		IPv6Address: config.DefaultIPv6Address, MetadataAddress: config.DefaultMetadataAddress,
	}}
	for _, n := range config.DefaultUnlistedNames {
		p.names[n] = true
	}
	if cfg != nil {
		for i := range cfg.Profiles {
			targets = append(targets, generator.ProfileVerifyTargets(cfg, &cfg.Profiles[i]))
		}
	}
	for _, t := range targets {
		if t.UnlistedName != "" {
			p.names[strings.ToLower(t.UnlistedName)] = true
		}
		for _, a := range []string{t.UnlistedAddress, t.IPv6Address, t.MetadataAddress, net.JoinHostPort(t.Resolver, "53")} {
			if ap, err := netip.ParseAddrPort(a); err == nil {
				p.dests[ap] = true
			}
		}
	}
	return p
}

// leaveOut returns rows and dests without what agentbox probed, and what
// it left out, sorted.
func (p probes) leaveOut(rows []denials.Row, dests []denials.Dest) ([]denials.Row, []denials.Dest, []string) {
	var left []string
	rows = slices.DeleteFunc(slices.Clone(rows), func(r denials.Row) bool {
		if p.names[r.Name] {
			left = append(left, r.Name)
			return true
		}
		return false
	})
	seen := map[netip.AddrPort]bool{}
	dests = slices.DeleteFunc(slices.Clone(dests), func(d denials.Dest) bool {
		ap := netip.AddrPortFrom(d.Addr, d.Port)
		if !p.dests[ap] {
			return false
		}
		if !seen[ap] {
			seen[ap] = true
			left = append(left, ap.String())
		}
		return true
	})
	slices.Sort(left)
	return rows, dests, slices.Compact(left)
}

// blockedDests converts the report's destinations for printing.
func blockedDests(dests []denials.Dest) []BlockedDest {
	out := []BlockedDest{}
	for _, d := range dests {
		b := BlockedDest{Address: d.Addr.String(), Port: d.Port, Protocol: d.Proto, Count: d.Count, Reason: d.Reason, Why: d.Why}
		b.First, b.Last = timeRange(d.First, d.Last)
		out = append(out, b)
	}
	return out
}

// timeRange is first and last in UTC, or nils when first is zero (the log
// had no time).
func timeRange(first, last time.Time) (*time.Time, *time.Time) {
	if first.IsZero() {
		return nil, nil
	}
	f, l := first.UTC(), last.UTC()
	return &f, &l
}
