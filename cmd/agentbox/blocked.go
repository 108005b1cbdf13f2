package main

// agentbox blocked: what the sandbox refused, from the egress log.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/denials"
	"github.com/agentbox-dev/agentbox/internal/shquote"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/spf13/cobra"
)

// egressLogSource opens the egress log (with Docker's timestamps) of the
// sandbox in dir, or of its task when task is not empty, from since on
// when since is not zero. dockerEgressLog is the real one (realDeps).
type egressLogSource func(ctx context.Context, dir, task string, since time.Time) (io.ReadCloser, error)

// blockedView is what blocked prints (--json: this shape, documented in
// docs/firewall.md). Names and whys hold the egress log's names as logged: the
// table escapes them (esc), --json through writeJSON.
type blockedView struct {
	Names           []blockedName           `json:"names"`
	Addresses       []blockedDest           `json:"addresses"`
	Packets         map[string]int          `json:"rejected_packets"`
	Dropped         int                     `json:"dropped_refusals"`
	DroppedRecords  int                     `json:"dropped_records"`
	BadRecords      int                     `json:"bad_records"`
	Skipped         int                     `json:"skipped_lines"`
	Suggestions     []blockedSuggestion     `json:"suggestions,omitempty"`
	CIDRSuggestions []blockedCIDRSuggestion `json:"cidr_suggestions,omitempty"`
	LeftOut         []string                `json:"left_out,omitempty"`   // refused, agentbox's own probes: never suggested
	PolicyAdd       string                  `json:"policy_add,omitempty"` // the command that applies Suggestions
	LogRate         int                     `json:"-"`                    // the firewall's records a second, at most
}

// blockedDest is a refused destination; times are null when the record had
// none.
type blockedDest struct {
	Address  string     `json:"address"`
	Port     uint16     `json:"port"`
	Protocol string     `json:"protocol"`
	Count    int        `json:"count"`
	First    *time.Time `json:"first_seen"`
	Last     *time.Time `json:"last_seen"`
	Reason   string     `json:"reason"`
	Why      string     `json:"why"`
}

type blockedCIDRSuggestion struct {
	denials.CIDRSuggestion
	Line    string `json:"line"`
	Command string `json:"policy_add"` // the command that applies it
}

type blockedName struct {
	Name  string     `json:"name"`
	Count int        `json:"count"`
	First *time.Time `json:"first_seen"` // null: the log line had no timestamp
	Last  *time.Time `json:"last_seen"`
	Types []string   `json:"types"`
	Why   string     `json:"why"`
}

type blockedSuggestion struct {
	denials.Suggestion
	Line string `json:"line"`
}

type blockedOptions struct {
	dir, task, since string
	json, suggest    bool
}

func newBlockedCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &blockedOptions{}
	c := &cobra.Command{
		Use:   "blocked",
		Short: "List what the sandbox refused (names, addresses and ports, reject counters) and suggest agentbox.yaml lines",
		Long: `List the names the sandbox's DNS filter refused, one row per name with its
count, first and last time, and query types, from the egress log; then the
connections the firewall refused, one row per address, port and protocol
with its count, first and last time and why (from the firewall's records,
at most a few a second); then the firewall's reject counters, which count
every packet. --suggest prints the network.domains entries that would allow
what was refused, leaving out noise (reverse lookups, .local, single-label
names, search-domain artefacts), and network.cidrs entries for public
addresses refused over TCP: review them before you paste.`,
		Example: `  agentbox blocked
  agentbox blocked --since 1h --suggest
  agentbox blocked --task fix-123 --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), d, stdout, c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&o.task, "task", "", "a task of agentbox run instead of the sandbox")
	_ = c.RegisterFlagCompletionFunc("task", completeTask(dir, false))
	f.StringVar(&o.since, "since", "", "only what was refused since: a duration (1h, 30m) or an RFC 3339 time")
	f.BoolVar(&o.json, "json", false, "print JSON (the shape is in docs/firewall.md)")
	f.BoolVar(&o.suggest, "suggest", false, "print the agentbox.yaml lines that would allow what was refused")
	return c
}

func (o *blockedOptions) run(ctx context.Context, d deps, stdout, stderr io.Writer) error {
	since, err := parseSince(o.since, d.now())
	if err != nil {
		return err
	}
	if o.task != "" && !generator.TaskName.MatchString(o.task) {
		return usageErrorf("invalid --task %q: a task's name is lower-case letters, digits and '-' (agentbox ps lists them)", o.task)
	}
	log, err := d.egressLog(ctx, o.dir, o.task, since)
	if err != nil {
		return err
	}
	cfg, _ := loadConfig(o.dir) // without it, only the resolver's answers tell a port from an address
	if cfg != nil && o.task == "" {
		sandbox.WarnStale(ctx, "", o.dir, cfg.Name, stderr)
	}
	opts := []denials.Option{denials.Ignore(firewall.ProbeName), denials.Packets(firewall.LogPrefix, firewall.LogReasons),
		denials.Ports(firewall.ReasonUnlisted, firewall.ReasonSpecial, cfg.CIDRPrefixes())}
	if !since.IsZero() {
		opts = append(opts, denials.Since(since))
	}
	rep, err := denials.Parse(log, opts...)
	if cerr := log.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	v := newBlockedView(rep, o.suggest, probedTargets(cfg))
	switch {
	case o.json:
		return report(stdout, "blocked", "json", v)
	case o.suggest:
		return report(stdout, "blocked", "suggest", v)
	}
	return report(stdout, "blocked", "text", v)
}

// parseSince reads --since: empty (everything), a duration before now, or
// an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usageErrorf("invalid --since %q: a positive duration (1h, 30m) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)
}

func newBlockedView(rep *denials.Report, suggest bool, probed probes) *blockedView {
	v := &blockedView{Names: []blockedName{}, Addresses: blockedDests(rep.Dests), Packets: rep.Packets,
		Dropped: rep.Dropped, DroppedRecords: rep.DroppedPackets, BadRecords: rep.BadRecords, Skipped: rep.Skipped,
		LogRate: firewall.LogRate}
	for _, r := range rep.Rows {
		n := blockedName{Name: r.Name, Count: r.Count, Types: r.Types, Why: r.Why}
		if n.Types == nil {
			n.Types = []string{}
		}
		n.First, n.Last = timeRange(r.First, r.Last)
		v.Names = append(v.Names, n)
	}
	if suggest {
		rows, dests, left := probed.leaveOut(rep.Rows, rep.Dests)
		v.Suggestions = []blockedSuggestion{}
		add := []string{"agentbox", "policy", "add"}
		for _, s := range denials.Suggest(rows) {
			v.Suggestions = append(v.Suggestions, blockedSuggestion{s, s.Line()})
			add = append(add, s.Domain)
		}
		if len(v.Suggestions) > 0 {
			v.PolicyAdd = shquote.Words(add)
		}
		v.CIDRSuggestions = []blockedCIDRSuggestion{}
		for _, s := range denials.SuggestCIDRs(dests, firewall.ReasonUnlisted) {
			cmd := shquote.Words([]string{"agentbox", "policy", "add", s.CIDR, "--ports", portArg(s.Ports)})
			v.CIDRSuggestions = append(v.CIDRSuggestions, blockedCIDRSuggestion{s, s.Line(), cmd})
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
func blockedDests(dests []denials.Dest) []blockedDest {
	out := []blockedDest{}
	for _, d := range dests {
		b := blockedDest{Address: d.Addr.String(), Port: d.Port, Protocol: d.Proto, Count: d.Count, Reason: d.Reason, Why: d.Why}
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

// portCell is a port of blocked's table: "-" for none (ICMP).
func portCell(d blockedDest) string {
	if d.Port == 0 {
		return "-"
	}
	return strconv.Itoa(int(d.Port))
}

// when is a time of blocked's table: UTC to the second, or "-".
func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// dockerEgressLog runs docker compose logs egress (the sandbox) or docker
// logs on the task's egress container. dnsmasq logs on stderr: the log is
// both streams, as Docker keeps them.
func dockerEgressLog(ctx context.Context, dir, task string, since time.Time) (io.ReadCloser, error) {
	var argv []string
	target := "egress"
	if task == "" {
		compose, _, err := (&sandboxOptions{dir: dir}).compose(ctx, false)
		if err != nil {
			return nil, err
		}
		argv = append(compose, "logs", "--no-color", "--no-log-prefix", "--timestamps")
	} else {
		o := &taskOptions{dir: dir}
		if err := o.load(ctx); err != nil {
			return nil, err
		}
		eg, err := sandbox.Docker{Path: o.docker}.ServiceState(ctx, generator.TaskProject(o.cfg.Name, task), "egress")
		if err != nil {
			return nil, err
		}
		if eg == nil {
			return nil, fmt.Errorf("task %s has no egress container (no such task, or removed: agentbox ps lists the tasks)", task)
		}
		argv, target = []string{o.docker, "logs", "--timestamps"}, eg.ID
	}
	if !since.IsZero() {
		argv = append(argv, "--since", since.UTC().Format(time.RFC3339Nano))
	}
	return sandbox.StartLog(exec.CommandContext(ctx, argv[0], append(argv[1:], target)...))
}
