package generator

import (
	"cmp"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"go.yaml.in/yaml/v3"
)

// A task of `agentbox run` is the generated sandbox under its own compose
// project, with a compose override that changes only what must differ per
// task: the project (so its own network namespace, firewall, workspace and
// state volumes), the agent's git database (the task's own clone), its
// command, its deadline (kept by the egress container, whose pid namespace
// the agent joins), and labels that say which task it is.

// Labels on a task's containers.
const (
	TaskLabel     = "dev.agentbox.task"     // the task's name
	ProjectLabel  = "dev.agentbox.project"  // the sandbox's compose project
	DeadlineLabel = "dev.agentbox.deadline" // seconds since the epoch
)

// WaitFirewallEnv, set in a task's agent container, makes its entrypoint
// wait until the filter resolver answers: a task's agent starts with its
// egress container, not after compose saw it healthy (half a second less).
const WaitFirewallEnv = "AGENTBOX_WAIT_FIREWALL"

// TaskName is a task's name: it becomes part of a compose project name and
// of a branch name.
var TaskName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Task is what differs for one task.
type Task struct {
	Name     string
	Deadline time.Time
	Origin   string   // the task's bare clone: the agent's read-only git database
	Command  []string // run in the agent container
	Env      []string // names passed from the host's environment (run.env)
	Profile  string   // the profile it runs under; "" is the default
	// LoginFrom is the Docker volume (the sandbox's state volume) whose
	// credentials files (the agent's catalog entry names them) are copied
	// into the task's fresh state volume before the agent starts
	// (run.copy_login); "" copies nothing.
	LoginFrom string
	// Binds are host paths mounted into the agent container besides the
	// task's git database (agentbox run --workspace direct): a bind whose
	// target is the workspace replaces the workspace volume.
	Binds []Bind
}

// Bind is a host path mounted into a task's agent container.
type Bind struct {
	Source   string // absolute host path
	Target   string // absolute path in the container
	ReadOnly bool
}

// TaskProject is the compose project of a task of the sandbox named name:
// no sandbox's name (validate.ProjectName) is one.
func TaskProject(name, task string) string { return name + validate.TaskSeparator + task }

// TaskOverride renders the compose override of a task of cfg's sandbox.
// The images are the sandbox's own (agentbox up builds them as
// NAME-egress and NAME-agent): a task builds nothing.
func TaskOverride(cfg *config.Config, t Task) ([]byte, error) {
	if !TaskName.MatchString(t.Name) {
		return nil, fmt.Errorf("invalid task name %q: want lower-case letters, digits and -, at most 40", t.Name)
	}
	if len(t.Command) == 0 {
		return nil, fmt.Errorf("a task needs a command")
	}
	profile := cmp.Or(t.Profile, cfg.DefaultProfile)
	prof, ok := cfg.Profile(profile)
	if !ok {
		return nil, config.ProfileError(cfg, profile)
	}
	// The keys its gateway holds stay out of the agent's environment: the
	// profile's compose file gives the agent placeholders (keys.go).
	pol := profilePolicy(cfg, prof)
	held, _ := HeldKeys(cfg, pol)
	forges := ProfileForges(cfg, pol)
	t.Env = slices.DeleteFunc(slices.Clone(t.Env), func(n string) bool {
		return slices.ContainsFunc(held, func(k HeldKey) bool { return k.Name == n }) || slices.Contains(forgeTokens(forges), n)
	})
	mounts, err := taskMounts(t, prof)
	if err != nil {
		return nil, err
	}
	labels := taskLabels(cfg, t)
	services, depends := taskAgent(cfg, t, prof, labels, mounts)
	taskKeyEnv(services["agent"].(map[string]any)["environment"].(map[string]any), held)
	taskForgeEnv(services["agent"].(map[string]any)["environment"].(map[string]any), forges, len(held) > 0)
	doc := map[string]any{"services": services}
	if t.LoginFrom != "" {
		copier, err := loginCopy(cfg, prof, t.LoginFrom, labels)
		if err != nil {
			return nil, err
		}
		services[LoginCopyService] = copier
		depends[LoginCopyService] = map[string]any{"condition": "service_completed_successfully"}
		doc["volumes"] = map[string]any{sandboxLoginVolume: map[string]any{"external": true, "name": t.LoginFrom}}
	}
	egressEnv := map[string]string{}
	for _, kv := range taskEgressEnv(cfg, t) {
		egressEnv[kv[0]] = kv[1]
	}
	services["egress"] = map[string]any{"image": cfg.Name + "-egress", "labels": labels, "environment": egressEnv}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return append([]byte("# "+Header+"\n# The compose override of task "+t.Name+" (agentbox run).\n"), out...), nil
}

// taskLabels are the labels of a task's containers (and of its Job).
func taskLabels(cfg *config.Config, t Task) map[string]string {
	return map[string]string{
		TaskLabel:     t.Name,
		ProjectLabel:  cfg.Name,
		DeadlineLabel: strconv.FormatInt(t.Deadline.Unix(), 10),
	}
}

// taskEgressEnv is the environment that makes a task's egress container
// keep its deadline, in order.
func taskEgressEnv(cfg *config.Config, t Task) [][2]string {
	return [][2]string{
		{firewall.DeadlineEnv, strconv.FormatInt(t.Deadline.Unix(), 10)},
		{firewall.AgentUIDEnv, strconv.Itoa(cfg.UID)},
	}
}

// dollarsDoubled is args with each $ doubled: compose interpolates ${VAR}
// in every value and Kubernetes expands $(VAR) in args, and both take $$
// for a literal $, so that the command reaches the container as written.
func dollarsDoubled(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "$", "$$")
	}
	return out
}

// taskMounts are the agent's mounts of a task: its git database,
// read-only, and the binds of a direct task (none under a locked profile).
func taskMounts(t Task, prof *config.Profile) ([]map[string]any, error) {
	mounts := []map[string]any{{"type": "bind", "source": strings.ReplaceAll(t.Origin, "$", "$$"), "target": OriginDir, "read_only": true}}
	for _, b := range t.Binds {
		if !path.IsAbs(b.Source) || !path.IsAbs(b.Target) || path.Clean(b.Target) != b.Target || strings.ContainsAny(b.Source+b.Target, "\x00\n") {
			return nil, fmt.Errorf("invalid bind %q -> %q", b.Source, b.Target)
		}
		if prof.Locked {
			return nil, fmt.Errorf("a task of a locked profile takes no bind mounts")
		}
		v := map[string]any{"type": "bind", "source": strings.ReplaceAll(b.Source, "$", "$$"), "target": b.Target,
			"bind": map[string]any{"create_host_path": false}}
		if b.ReadOnly {
			v["read_only"] = true
		}
		mounts = append(mounts, v)
	}
	return mounts, nil
}

// taskAgent is the task's agent service (and, under a locked profile, the
// workspace-init that clones from the task's git database), with the
// agent's depends_on, to which a login copy adds itself.
func taskAgent(cfg *config.Config, t Task, prof *config.Profile, labels map[string]string, mounts []map[string]any) (services, depends map[string]any) {
	env := map[string]any{WaitFirewallEnv: "1"}
	for _, name := range t.Env {
		env[name] = nil // compose takes the value from its own environment
	}
	// Started, not healthy: the entrypoint waits for the firewall itself.
	depends = map[string]any{"egress": map[string]any{"condition": "service_started", "restart": true}}
	agent := map[string]any{
		"image":       cfg.Name + "-agent",
		"pid":         "service:egress",
		"command":     dollarsDoubled(t.Command),
		"labels":      labels,
		"environment": env,
		"depends_on":  depends,
	}
	services = map[string]any{"agent": agent}
	if prof.Locked {
		// The clone is workspace-init's, from the task's git database.
		services["workspace-init"] = map[string]any{"image": cfg.Name + "-agent", "labels": labels, "volumes": mounts}
	} else {
		agent["volumes"] = mounts
	}
	return services, depends
}

// LoginCopyService is the one-shot service of a task that copies the
// sandbox's login into the task's state volume (run.copy_login).
const LoginCopyService = "login-copy"

// sandboxLoginVolume is the task's name of the sandbox's state volume, and
// LoginDir where login-copy sees it, read-only.
const (
	sandboxLoginVolume = "sandbox-login"
	LoginDir           = "/run/agentbox/login"
)

// volumeName is Docker's grammar of a volume's name.
var volumeName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// loginCopyScript copies each file named in its arguments from LoginDir to
// the state directory ($1), when it is a regular file there (not a link),
// readable by the agent's user alone. Nothing goes the other way: the
// sandbox's volume is mounted read-only.
const loginCopyScript = `set -eu
to=$1; shift
for f; do
  if [ -f "` + LoginDir + `/$f" ] && [ ! -L "` + LoginDir + `/$f" ]; then
    rm -f "$to/$f"
    cp "` + LoginDir + `/$f" "$to/$f"
    chmod 600 "$to/$f"
  fi
done`

// loginCopy is the service that copies the sandbox's login (the agent's
// credentials files in volume from) into a task's fresh state volume: as
// the agent's user, with no network and no capabilities, and only the
// files the catalog names.
func loginCopy(cfg *config.Config, prof *config.Profile, from string, labels map[string]string) (map[string]any, error) {
	a := cfg.Agent
	switch {
	case !volumeName.MatchString(from):
		return nil, fmt.Errorf("invalid volume name %q", from)
	case prof.Locked:
		return nil, fmt.Errorf("a task of a locked profile has no state volume to copy a login into")
	case a.StateDir == "" || len(a.Credentials) == 0:
		return nil, fmt.Errorf("agent %s keeps no login in files", a.Name)
	}
	entry := []string{"/bin/sh", "-c", loginCopyScript, LoginCopyService, a.StateDir}
	entry = append(entry, a.Credentials...)
	for i, s := range entry {
		entry[i] = strings.ReplaceAll(s, "$", "$$")
	}
	return map[string]any{
		"image":        cfg.Name + "-agent",
		"labels":       labels,
		"network_mode": "none",
		"user":         fmt.Sprintf("%d:%d", cfg.UID, cfg.GID),
		"cap_drop":     []string{"ALL"},
		"security_opt": []string{"no-new-privileges:true"},
		"read_only":    true,
		"entrypoint":   entry,
		"command":      []string{},
		"volumes": []map[string]any{
			{"type": "volume", "source": sandboxLoginVolume, "target": LoginDir, "read_only": true},
			{"type": "volume", "source": ProfileVolume(prof.Name, AgentStateVolume), "target": a.StateDir},
		},
	}, nil
}
