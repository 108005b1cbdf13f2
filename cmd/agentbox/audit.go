package main

// The audit log of agentbox allow and revoke, and agentbox audit.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/spf13/cobra"
)

// auditRecord is one line of the audit log (agentbox audit --json prints a
// list of them; the shape is in docs/profiles-and-elevation.md). A grant's expiry is Expires: the
// kernel ends it then, with no process of agentbox; agentbox audit derives
// an expire record from the log (withExpiries), which holds no line for it.
type auditRecord struct {
	Time     time.Time  `json:"time"`
	Event    string     `json:"event"` // grant, revoke or expire
	User     string     `json:"user"`  // the host user who ran agentbox
	Project  string     `json:"project"`
	Sandbox  string     `json:"sandbox"`
	Task     string     `json:"task,omitempty"` // empty: the sandbox of agentbox up
	Dest     string     `json:"destination"`    // an address or CIDR
	Ports    []uint16   `json:"ports"`
	Seconds  int64      `json:"duration_seconds,omitempty"` // grants only
	Expires  *time.Time `json:"expires,omitempty"`          // grants only
	Reason   string     `json:"reason,omitempty"`
	Result   string     `json:"result"` // "ok", or the error
	Duration string     `json:"-"`      // Seconds as 1h30m, for the table
}

// Audit events.
const (
	eventGrant  = "grant"
	eventRevoke = "revoke"
	eventExpire = "expire" // derived by agentbox audit, never written
	resultOK    = "ok"
)

// maxReason caps a grant's reason, in bytes.
const maxReason = 500

// stateAuditDir is the directory of the audit logs (realDeps).
func stateAuditDir() (string, error) { return settings.StateDir("audit") }

// auditPath is the audit log of the sandbox name of the project in
// project. It refuses a log inside the project, which the sandbox mounts.
func auditPath(d deps, project, name string) (string, error) {
	dir, err := d.auditDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".jsonl")
	if inside(project, dir) {
		return "", fmt.Errorf("the audit log %s would be inside the project %s, which the sandbox mounts: set XDG_STATE_HOME to a directory outside it", path, project)
	}
	return path, nil
}

// inside says whether dir is project or below it, links resolved as far as
// they exist.
func inside(project, dir string) bool {
	resolve := func(p string) string {
		p, _ = filepath.Abs(p)
		for q, rest := p, ""; q != filepath.Dir(q); q, rest = filepath.Dir(q), filepath.Join(filepath.Base(q), rest) {
			if r, err := filepath.EvalSymlinks(q); err == nil {
				return filepath.Join(r, rest)
			}
		}
		return p
	}
	rel, err := filepath.Rel(resolve(project), resolve(dir))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// openAudit opens the audit log at path for appending, creating it (0600)
// and its directory (0700).
func openAudit(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the audit log's directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return f, nil
}

// writeAudit appends r to f as one line, in one write: with O_APPEND,
// records of concurrent agentbox processes do not interleave.
func writeAudit(f *os.File, r auditRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding an audit record: %w", err)
	}
	// termsafe.JSON: a reason's C1 and bidi runes escaped, as \u009b, so that
	// the log too is safe to print.
	if _, err := f.Write(append(termsafe.JSON(line), '\n')); err != nil {
		return fmt.Errorf("writing the audit log: %w", err)
	}
	return nil
}

// appendAudit appends r to the audit log at path.
func appendAudit(path string, r auditRecord) error {
	f, err := openAudit(path)
	if err != nil {
		return err
	}
	err = writeAudit(f, r)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing the audit log: %w", cerr)
	}
	return err
}

// readAudit reads the audit log at path, the records at or after since. A
// missing log has no records.
func readAudit(path string, since time.Time) ([]auditRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer f.Close()
	var out []auditRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r auditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: not an audit record: %w", path, n, err)
		}
		if !r.Time.Before(since) {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, nil
}

// clipReason is a grant's reason as the audit log keeps it: spaces
// trimmed, cut to at most maxReason bytes where no UTF-8 sequence is split.
// It stays as given otherwise: the log holds it JSON-escaped (writeAudit),
// and audit and allow --list print it through termsafe.
func clipReason(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && cut > maxReason-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if !utf8.RuneStart(s[cut]) { // no sequence starts near the cut: bytes of invalid UTF-8
		cut = maxReason
	}
	return strings.TrimSpace(s[:cut])
}

type auditOptions struct {
	dir, since string
	json       bool
}

func newAuditCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &auditOptions{}
	c := &cobra.Command{
		Use:   "audit",
		Short: "Print the audit log of agentbox allow and revoke",
		Long: `Print the audit log of the project's sandbox and tasks: every grant asked of
agentbox allow (also those refused, with why) and every revoke, with the host
user, the destination, its ports, the duration, the expiry and the reason; and
an expire event at the expiry of each grant's ports that no revoke ended and no
later grant renewed. The kernel ends a grant by itself, so expire events are
derived from the log when it is printed, not written. The log is JSON lines at
$XDG_STATE_HOME/agentbox/audit/NAME.jsonl (else ~/.local/state/...), on the
host and mounted nowhere: the agent can neither write nor erase it.`,
		Example: `  agentbox audit
  agentbox audit --since 24h --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(d, stdout)
		},
	}
	c.Flags().StringVar(&o.since, "since", "", "only the records since: a duration (1h, 30m) or an RFC 3339 time")
	c.Flags().BoolVar(&o.json, "json", false, "print JSON (the shape is in docs/profiles-and-elevation.md)")
	return c
}

func (o *auditOptions) run(d deps, stdout io.Writer) error {
	now := d.now()
	since, err := parseSince(o.since, now)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(o.dir)
	if err != nil {
		return err
	}
	path, err := auditPath(d, o.dir, cfg.Name)
	if err != nil {
		return err
	}
	// The whole log: a grant before since may expire after it.
	all, err := readAudit(path, time.Time{})
	if err != nil {
		return err
	}
	recs := []auditRecord{}
	for _, r := range withExpiries(all, now) {
		if !r.Time.Before(since) {
			recs = append(recs, r)
		}
	}
	if o.json {
		return report(stdout, "audit", "json", recs)
	}
	for i := range recs {
		if recs[i].Seconds > 0 {
			recs[i].Duration = config.FormatTaskDuration(time.Duration(recs[i].Seconds) * time.Second)
		}
	}
	return report(stdout, "audit", "text", recs)
}

// grantKey is one granted port of a destination in the sandbox or a task:
// what the egress adds, renews and removes as one element.
type grantKey struct {
	task, dest string
	port       uint16
}

// withExpiries returns recs (the log, oldest first) with an expire record
// at the expiry of each successful grant's ports that neither a revoke
// ended nor a later grant renewed before it, once that expiry is at or
// before now; sorted by time. The kernel removes an expired element by
// itself, so the log has no line for it. (A sandbox stopped earlier lost
// its grants then: an expiry says when a grant ended at the latest.)
func withExpiries(recs []auditRecord, now time.Time) []auditRecord {
	live := map[grantKey]int{}    // the grant record in force for each port
	expired := map[int][]uint16{} // grant record -> its ports that expired
	expire := func(k grantKey, at time.Time) {
		if i, ok := live[k]; ok && !recs[i].Expires.After(at) {
			expired[i] = append(expired[i], k.port)
		}
		delete(live, k)
	}
	for i, r := range recs {
		if r.Result != resultOK || (r.Event == eventGrant && r.Expires == nil) {
			continue
		}
		for _, p := range r.Ports {
			k := grantKey{r.Task, r.Dest, p}
			switch r.Event {
			case eventGrant:
				expire(k, r.Time)
				live[k] = i
			case eventRevoke, eventPolicyAdd:
				// policy add leaves the element without an end.
				expire(k, r.Time)
			}
		}
	}
	for k := range live {
		expire(k, now)
	}
	out := slices.Clone(recs)
	for i, ports := range expired {
		g := recs[i]
		slices.Sort(ports)
		out = append(out, auditRecord{Time: *g.Expires, Event: eventExpire, Project: g.Project, Sandbox: g.Sandbox,
			Task: g.Task, Dest: g.Dest, Ports: ports, Reason: g.Reason, Result: resultOK})
	}
	slices.SortStableFunc(out, func(a, b auditRecord) int { return a.Time.Compare(b.Time) })
	return out
}

// loadConfig loads agentbox.yaml of the project in dir, without the lock.
func loadConfig(dir string) (*config.Config, error) {
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Loaded})
	if err != nil {
		return nil, err
	}
	return c.Config, nil
}
