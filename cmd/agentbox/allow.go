package main

// agentbox allow and revoke: timed grants of an address, a CIDR or a name,
// which the egress container's nftables sets expire by themselves.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/spf13/cobra"
)

// egressRunner runs the egress entrypoint (firewall.EntrypointPath) with
// args in the egress container of the sandbox in dir, or of its task when
// task is not empty, and returns what it printed. Its error is the
// entrypoint's one-line message. dockerEgress is the real one (realDeps).
type egressRunner func(ctx context.Context, dir, task string, args ...string) (string, error)

type allowOptions struct {
	dir, task, duration, reason string
	list, json                  bool
}

func newAllowCmd(dir *string, d deps, stdout io.Writer) *cobra.Command {
	o := &allowOptions{}
	c := &cobra.Command{
		Use:   "allow DEST --for DURATION --reason TEXT",
		Short: "Let the running sandbox reach an address, CIDR or name for a while (logged; the kernel takes it back)",
		Long: `Grant the running sandbox (or a task of agentbox run: --task) an address,
CIDR or name on some TCP ports for a while. DEST is HOST, HOST:PORT[,PORT] or
[IPv6PREFIX]:PORT, HOST an address, a CIDR or a name (example.com or
*.example.com: the name and the names below it, which then resolve); the port
is 443 when none is written. The egress container's nftables sets expire the
grant by themselves: at expiry new connections are refused again and
established ones are cut, even if agentbox is gone.

Refused: anything overlapping a private, loopback, link-local, multicast or
other special range (a name's addresses in them stay refused by the kernel), or
elevation.never; a duration over elevation.max_duration (default 1h); any grant
when elevation.allowed is false. Every grant asked for goes to the audit log
(agentbox audit) with its result, refused or not (a malformed command line is
no grant).`,
		Example: `  agentbox allow 198.18.7.0/24 --for 30m --reason "fetch the test fixtures"
  agentbox allow '*.docs.example.com' --for 15m --reason "read the API docs"
  agentbox allow '[2001:2::/48]:443,8443' --for 1h --reason "staging API"
  agentbox allow 198.18.13.5:22 --task fix-123 --for 10m --reason "clone over ssh"
  agentbox allow --list`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.dir = *dir
			if o.json && !o.list {
				return usageErrorf("--json goes with --list")
			}
			if o.list {
				if len(args) > 0 {
					return usageErrorf("agentbox allow --list takes no destination")
				}
				return o.runList(c.Context(), d, stdout)
			}
			if len(args) == 0 {
				return usageErrorf("name a destination: agentbox allow DEST --for DURATION --reason TEXT")
			}
			return o.grant(c.Context(), d, args[0], stdout)
		},
	}
	f := c.Flags()
	f.StringVar(&o.task, "task", "", "a task of agentbox run instead of the sandbox")
	_ = c.RegisterFlagCompletionFunc("task", completeTask(dir, false))
	f.StringVar(&o.duration, "for", "", "how long the grant lasts: 30m, 1h, 1h30m (at most elevation.max_duration)")
	f.StringVar(&o.reason, "reason", "", "why the sandbox needs it (recorded in the audit log)")
	f.BoolVar(&o.list, "list", false, "list the grants in force, with the time left")
	f.BoolVar(&o.json, "json", false, "with --list: print JSON (the shape is in docs/profiles-and-elevation.md)")
	return c
}

// grantRequest is a grant that passed allow's usage checks.
type grantRequest struct {
	dest
	d      time.Duration
	reason string
}

// parse runs the checks of the command line: destination, --for, --reason.
func (o *allowOptions) parse(dest string) (*grantRequest, error) {
	if err := checkTask(o.task); err != nil {
		return nil, err
	}
	dst, err := parseDest(dest)
	if err != nil {
		return nil, err
	}
	if o.duration == "" {
		return nil, usageErrorf("--for is required: how long the grant lasts, such as 30m or 1h")
	}
	d, err := config.ParseTaskDuration(o.duration)
	if err != nil {
		return nil, usageErrorf("invalid --for: %v", err)
	}
	reason := clipReason(o.reason)
	if reason == "" {
		return nil, usageErrorf("--reason is required: say why the sandbox needs %s (it goes to the audit log)", dst)
	}
	return &grantRequest{dst, d, reason}, nil
}

// check applies agentbox.yaml's elevation section and the built-in
// refusals to g.
func (g *grantRequest) check(cfg *config.Config, p *config.Profile) error {
	if !p.Elevate.Allowed {
		if at := p.Elevate.AllowedPos; at.Line > 0 {
			return fmt.Errorf("elevation is not allowed in profile %s (elevation.allowed is false at %s:%d:%d)", p.Name, config.ConfigFile, at.Line, at.Col)
		}
		return fmt.Errorf("elevation is not allowed in profile %s (a locked profile permits none unless its elevation.allowed says so)", p.Name)
	}
	cfg = elevationConfig(cfg, p)
	if g.d > cfg.ElevationMax {
		where := "(the default)"
		if at := cfg.ElevationMaxPos; at.Line > 0 {
			where = fmt.Sprintf("(at %s:%d:%d)", config.ConfigFile, at.Line, at.Col)
		}
		return fmt.Errorf("--for %s is over elevation.max_duration %s %s", config.FormatTaskDuration(g.d), config.FormatTaskDuration(cfg.ElevationMax), where)
	}
	refused := config.RefusedGrant
	if g.name != "" {
		refused = func(cfg *config.Config, _ netip.Prefix) error { return config.RefusedName(cfg, g.name) }
	}
	if err := refused(cfg, g.prefix); err != nil {
		return fmt.Errorf("refusing to grant: %w", err)
	}
	return nil
}

func (o *allowOptions) grant(ctx context.Context, d deps, dest string, stdout io.Writer) error {
	g, err := o.parse(dest)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(o.dir)
	if err != nil {
		return err
	}
	rec := newRecord(d, o.dir, cfg.Name, o.task, eventGrant, g.dest)
	expires := rec.Time.Add(g.d)
	rec.Seconds, rec.Expires, rec.Reason = int64(g.d/time.Second), &expires, g.reason
	seconds := strconv.FormatInt(rec.Seconds, 10)
	// Every grant asked for is recorded, with why it was refused when it
	// was: no sandbox, the profile's elevation, or the egress.
	asked := false
	err = audited(d, o.dir, cfg.Name, &rec, func() error {
		name, err := d.profile(ctx, o.dir, o.task)
		if err != nil {
			return err
		}
		prof, err := sandbox.ProfileOf(cfg, name)
		if err != nil {
			return err
		}
		if err := g.check(cfg, prof); err != nil {
			return err
		}
		asked = true
		_, err = d.egress(ctx, o.dir, o.task, g.command("grant"), g.String(), portArg(g.ports), seconds)
		return err
	})
	if err != nil && asked {
		return fmt.Errorf("granting %s: %w", g, err)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "granted %s ports %s for %s, until %s\n", g, portArg(g.ports), config.FormatTaskDuration(g.d), expires.UTC().Format(time.RFC3339))
	return nil
}

// elevationConfig is cfg with profile p's elevation limits.
func elevationConfig(cfg *config.Config, p *config.Profile) *config.Config {
	c := *cfg
	c.ElevationAllowed, c.ElevationAllowedPos = p.Elevate.Allowed, p.Elevate.AllowedPos
	c.ElevationMax, c.ElevationMaxPos = p.Elevate.Max, p.Elevate.MaxPos
	c.ElevationNever, c.ElevationNeverPos = p.Elevate.Never, p.Elevate.NeverPos
	c.ElevationNeverNames, c.ElevationNeverNamesPos = p.Elevate.NeverNames, p.Elevate.NeverNamesPos
	return &c
}

// command is the egress's command for verb (grant, revoke) on d: the
// "-name" one for a name.
func (d dest) command(verb string) string {
	if d.name != "" {
		return verb + "-name"
	}
	return verb
}

// newRecord starts an audit record of event on dst.
func newRecord(d deps, dir, name, task, event string, dst dest) auditRecord {
	return auditRecord{Time: d.now().UTC(), Event: event, User: d.user(), Project: absDir(dir),
		Sandbox: name, Task: task, Dest: dst.String(), Ports: dst.ports}
}

// audited opens the audit log, runs do, and records rec with do's result:
// a log that cannot be written stops the change before it is made.
func audited(d deps, dir, name string, rec *auditRecord, do func() error) error {
	path, err := auditPath(d, dir, name)
	if err != nil {
		return err
	}
	f, err := openAudit(path)
	if err != nil {
		return err
	}
	defer f.Close()
	doErr := do()
	rec.Result = resultOK
	if doErr != nil {
		rec.Result = doErr.Error()
	}
	if err := writeAudit(f, *rec); err != nil {
		return errors.Join(doErr, err)
	}
	return doErr
}

func checkTask(task string) error {
	if task != "" && !generator.TaskName.MatchString(task) {
		return usageErrorf("invalid --task %q: a task's name is lower-case letters, digits and '-' (agentbox ps lists them)", task)
	}
	return nil
}

// hostUser names the user running agentbox (realDeps).
func hostUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// dockerEgress runs the egress entrypoint with docker compose exec (the
// sandbox) or docker exec (a task's egress container).
func dockerEgress(ctx context.Context, dir, task string, args ...string) (string, error) {
	var argv []string
	if task == "" {
		compose, _, err := (&sandboxOptions{dir: dir, running: true}).compose(ctx, false)
		if err != nil {
			return "", err
		}
		argv = append(compose, "exec", "-T", "egress")
	} else {
		o := &taskOptions{dir: dir}
		if err := o.load(ctx); err != nil {
			return "", err
		}
		eg, err := sandbox.Docker{Path: o.docker}.ServiceState(ctx, generator.TaskProject(o.cfg.Name, task), "egress")
		if err != nil {
			return "", err
		}
		if eg == nil {
			return "", fmt.Errorf("task %s has no egress container (no such task, or removed: agentbox ps lists the tasks)", task)
		}
		argv = []string{o.docker, "exec", "-i", eg.ID}
	}
	argv = append(append(argv, firewall.EntrypointPath), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", errors.New(sandbox.FirstLine(stderr.Bytes(), err))
	}
	return stdout.String(), nil
}
