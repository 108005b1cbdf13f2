package main

// agentbox allow --list and agentbox revoke.

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/spf13/cobra"
)

// grantRow is one granted port of allow --list (--json: a list of these;
// the shape is in docs/profiles-and-elevation.md).
type grantRow struct {
	Dest        string    `json:"destination"`
	Port        uint16    `json:"port"`
	SecondsLeft int64     `json:"seconds_left"`
	Expires     time.Time `json:"expires"`
	Reason      string    `json:"reason"` // from the audit log; empty when no record matches
	Left        string    `json:"-"`      // SecondsLeft as 1h30m
}

func (o *allowOptions) runList(ctx context.Context, d deps, stdout io.Writer) error {
	if err := checkTask(o.task); err != nil {
		return err
	}
	cfg, err := loadConfig(o.dir)
	if err != nil {
		return err
	}
	rows, err := listGrants(ctx, d, o.dir, cfg.Name, o.task)
	if err != nil {
		return err
	}
	if o.json {
		return report(stdout, "allow.list", "json", rows)
	}
	return report(stdout, "allow.list", "text", rows)
}

// listGrants lists the grants in force in the sandbox (task "") or a
// task of the sandbox name in dir, each with its reason from the audit log.
func listGrants(ctx context.Context, d deps, dir, name, task string) ([]grantRow, error) {
	out, err := d.egress(ctx, dir, task, "grants")
	if err != nil {
		return nil, fmt.Errorf("listing the grants: %w", err)
	}
	rows, err := parseGrants(out, d.now().UTC())
	if err != nil {
		return nil, err
	}
	path, err := auditPath(d, dir, name)
	if err != nil {
		return nil, err
	}
	recs, err := readAudit(path, time.Time{})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Reason = reasonOf(recs, task, rows[i])
	}
	return rows, nil
}

// parseGrants reads the egress's `grants`: PREFIX PORT SECONDS_LEFT lines,
// then NAME PORT SECONDS_LEFT for the granted names.
func parseGrants(out string, now time.Time) ([]grantRow, error) {
	rows := []grantRow{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		bad := fmt.Errorf("the egress listed an unexpected grant %+q", line)
		if len(f) != 3 {
			return nil, bad
		}
		dst, err := grantedDest(f[0])
		if err != nil {
			return nil, bad
		}
		port, err1 := strconv.ParseUint(f[1], 10, 16)
		left, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || port == 0 || left < 0 {
			return nil, bad
		}
		d := time.Duration(left) * time.Second
		rows = append(rows, grantRow{Dest: dst, Port: uint16(port), SecondsLeft: left,
			Expires: now.Add(d), Left: config.FormatTaskDuration(d)})
	}
	return rows, nil
}

// grantedDest reads a destination as the egress lists it: an address, a
// CIDR, or a name as the egress takes it.
func grantedDest(s string) (string, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.String(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()).String(), nil
	}
	name, err := config.GrantName(s)
	if err != nil || name != s {
		return "", fmt.Errorf("not a destination: %+q", s)
	}
	return name, nil
}

// grantSlack is how much later a grant may expire in the egress than its
// audit record says: the record's clock starts when allow starts, the
// egress's when it receives the grant, seconds later on a loaded machine.
const grantSlack = 15 * time.Second

// reasonOf is the reason of the last successful grant of the task that
// covers r and has not expired.
func reasonOf(recs []auditRecord, task string, r grantRow) string {
	for i := len(recs) - 1; i >= 0; i-- {
		rec := recs[i]
		if rec.Event == eventGrant && rec.Result == resultOK && rec.Task == task && rec.Dest == r.Dest &&
			slices.Contains(rec.Ports, r.Port) && rec.Expires != nil && !rec.Expires.Before(r.Expires.Add(-grantSlack)) {
			return rec.Reason
		}
	}
	return ""
}

type revokeOptions struct {
	dir, task string
}

func newRevokeCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &revokeOptions{}
	c := &cobra.Command{
		Use:   "revoke DEST",
		Short: "End a grant of agentbox allow before its time (logged)",
		Long: `End a grant of agentbox allow now: DEST is written as for allow (the port is
443 when none is written). The revoke goes to the audit log (agentbox audit).`,
		Example: `  agentbox revoke 198.18.7.0/24
  agentbox revoke docs.example.com
  agentbox revoke 198.18.13.5:22 --task fix-123`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("name one destination: agentbox revoke DEST")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			return o.run(c.Context(), d, args[0], stdout)
		},
	}
	c.Flags().StringVar(&o.task, "task", "", "a task of agentbox run instead of the sandbox")
	_ = c.RegisterFlagCompletionFunc("task", completeTask(dir, false))
	return c
}

func (o *revokeOptions) run(ctx context.Context, d deps, dest string, stdout io.Writer) error {
	if err := checkTask(o.task); err != nil {
		return err
	}
	dst, err := parseDest(dest)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(o.dir)
	if err != nil {
		return err
	}
	rec := newRecord(d, o.dir, cfg.Name, o.task, eventRevoke, dst)
	err = audited(d, o.dir, cfg.Name, &rec, func() error {
		_, err := d.egress(ctx, o.dir, o.task, dst.command("revoke"), dst.String(), portArg(dst.ports))
		return err
	})
	if err != nil {
		return fmt.Errorf("revoking %s: %w", dst, err)
	}
	fmt.Fprintf(stdout, "revoked %s ports %s\n", dst, portArg(dst.ports))
	return nil
}

// absDir is dir made absolute, as the audit log names the project.
func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
