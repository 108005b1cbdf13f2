package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// The run section: what agentbox run (one sandbox per task) reads from
// agentbox.yaml. It changes none of the generated files.

// Defaults and limits of a task's deadline.
const (
	DefaultRunTimeout    = 30 * time.Minute
	DefaultRunMaxTimeout = 4 * time.Hour
	MaxTaskDuration      = 7 * 24 * time.Hour
)

// ReservedEnvPrefix starts the names of the variables agentbox sets in the
// agent itself; run.env may not pass them from the host.
const ReservedEnvPrefix = "AGENTBOX_"

// TaskDurationGrammar is the grammar of run.timeout, run.max_timeout and
// agentbox run --timeout: whole hours, minutes and seconds, in that order.
const TaskDurationGrammar = `([0-9]+h)?([0-9]+m)?([0-9]+s)?`

var taskDurationRe = regexp.MustCompile("^" + TaskDurationGrammar + "$")

// taskDurationUnits are the units of taskDurationRe's groups, in order.
var taskDurationUnits = []time.Duration{time.Hour, time.Minute, time.Second}

// ParseTaskDuration parses a task's deadline such as 30m, 4h or 1h30m: a
// positive whole number of hours, minutes and seconds (in that order, each
// at most once), at most MaxTaskDuration. No fractions, no other units, no
// sign.
func ParseTaskDuration(s string) (time.Duration, error) {
	m := taskDurationRe.FindStringSubmatch(s)
	if m == nil || s == "" {
		return 0, fmt.Errorf("invalid duration %+q: want whole hours, minutes or seconds such as 30m, 4h or 1h30m", s)
	}
	var d time.Duration
	for i, unit := range taskDurationUnits {
		group := m[i+1] // digits and the unit
		if group == "" {
			continue
		}
		n, err := strconv.ParseInt(group[:len(group)-1], 10, 64)
		if err != nil || n > int64(MaxTaskDuration/unit) {
			return 0, tooLong(s)
		}
		d += time.Duration(n) * unit
	}
	switch {
	case d == 0:
		return 0, fmt.Errorf("duration %+q must be positive", s)
	case d > MaxTaskDuration:
		return 0, tooLong(s)
	}
	return d, nil
}

func tooLong(s string) error {
	return fmt.Errorf("duration %+q is over the maximum of 7 days (%s)", s, FormatTaskDuration(MaxTaskDuration))
}

// FormatTaskDuration writes d in ParseTaskDuration's grammar, such as 1h30m,
// dropping any fraction of a second. It writes 0s for d under a second.
func FormatTaskDuration(d time.Duration) string {
	var b strings.Builder
	for i, unit := range taskDurationUnits {
		if n := d / unit; n > 0 {
			fmt.Fprintf(&b, "%d%c", n, "hms"[i])
			d -= n * unit
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

// run checks the run section and applies its defaults. A timeout left out
// is DefaultRunTimeout, or the maximum when that is less.
func (c *checker) run(w wireRun, secrets []string, env map[string]string, cfg *Config) {
	maxTimeout, maxOK := c.taskDuration("run.max_timeout", w.MaxTimeout, DefaultRunMaxTimeout)
	timeout, ok := c.taskDuration("run.timeout", w.Timeout, min(DefaultRunTimeout, maxTimeout))
	cfg.RunTimeout, cfg.RunTimeoutPos = timeout, c.pos["run.timeout"]
	cfg.RunMaxTimeout, cfg.RunMaxTimeoutPos = maxTimeout, c.pos["run.max_timeout"]
	switch {
	case !ok || !maxOK || timeout <= maxTimeout:
	case w.MaxTimeout == nil:
		c.failf("run.timeout", "timeout %s is over run.max_timeout %s (the default)", *w.Timeout, FormatTaskDuration(maxTimeout))
	default:
		at := cfg.RunMaxTimeoutPos
		c.failf("run.timeout", "timeout %s is over run.max_timeout %s (at %d:%d)", *w.Timeout, *w.MaxTimeout, at.Line, at.Col)
	}
	c.runEnv(w.Env, secrets, env, cfg)
	if w.CopyLogin != nil {
		cfg.CopyLogin, cfg.CopyLoginPos = *w.CopyLogin, c.pos["run.copy_login"]
	}
}

// taskDuration parses the duration at path, def when it is not set. A
// duration that does not parse is reported; ok is false.
func (c *checker) taskDuration(path string, s *string, def time.Duration) (d time.Duration, ok bool) {
	if s == nil {
		return def, true
	}
	d, err := ParseTaskDuration(*s)
	if err != nil {
		c.fail(path, err)
		return def, false
	}
	return d, true
}

// hostNames checks a list of names passed from the host's environment
// (secrets, run.env): valid names, each once, none reserved, none also set
// in env or by the agent's catalog entry, and none listed earlier under
// other (run.env against secrets). It returns the names, sorted, and where
// each is written.
func (c *checker) hostNames(key string, names []string, env map[string]string, cfg *Config, other map[string]string) ([]string, []yamlpos.Pos) {
	type entry struct {
		name string
		pos  yamlpos.Pos
	}
	var out []entry
	first := map[string]int{} // name -> index of its first entry
	for i, name := range entries(c, key, names) {
		path := fmt.Sprintf("%s[%d]", key, i)
		if err := validate.EnvName(name); err != nil {
			c.fail(path, err)
			continue
		}
		if j, seen := first[name]; seen {
			at := c.pos[fmt.Sprintf("%s[%d]", key, j)]
			c.failf(path, "%+q is listed twice (at %d:%d)", name, at.Line, at.Col)
			continue
		}
		first[name] = i
		if strings.HasPrefix(name, ReservedEnvPrefix) {
			c.failf(path, "%+q is reserved: agentbox sets %s* variables in the agent itself", name, ReservedEnvPrefix)
		} else if _, set := env[name]; set {
			at := c.pos[yamlpos.Join("env", name)]
			c.failf(path, "%+q is also set in env (at %d:%d); a variable comes from agentbox.yaml or from the host, not both", name, at.Line, at.Col)
		} else if slices.ContainsFunc(cfg.Agent.Env, func(e catalog.EnvVar) bool { return e.Name == name }) {
			c.failf(path, "%+q is set by agent %s itself; write it in env to change it", name, cfg.Agent.Name)
		} else if at, listed := other[name]; listed {
			p := c.pos[at]
			c.failf(path, "%+q is listed in secrets (at %d:%d), which every task gets too", name, p.Line, p.Col)
		}
		out = append(out, entry{name, c.pos[path]})
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var sorted []string
	var pos []yamlpos.Pos
	for _, e := range out {
		sorted, pos = append(sorted, e.name), append(pos, e.pos)
	}
	return sorted, pos
}

// secrets checks secrets (see hostNames).
func (c *checker) secrets(names []string, env map[string]string, cfg *Config) {
	cfg.Secrets, cfg.SecretsPos = c.hostNames("secrets", names, env, cfg, nil)
}

// runEnv checks run.env (see hostNames): no name listed in secrets.
func (c *checker) runEnv(names []string, secrets []string, env map[string]string, cfg *Config) {
	listed := map[string]string{}
	for i, name := range secrets {
		if _, seen := listed[name]; !seen {
			listed[name] = fmt.Sprintf("secrets[%d]", i)
		}
	}
	cfg.RunEnv, cfg.RunEnvPos = c.hostNames("run.env", names, env, cfg, listed)
}

// TaskEnv are the names a task takes from the host's environment: secrets
// and run.env, sorted.
func (c *Config) TaskEnv() []string {
	return slices.Sorted(slices.Values(append(slices.Clone(c.Secrets), c.RunEnv...)))
}
