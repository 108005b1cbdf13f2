package generator

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
)

// nameFragments are the pieces the names of TestDerivedNamesInjective are
// made of: agentbox's separators, the words of its derived names, and the
// characters that names may hold.
var nameFragments = []string{"a", "1", "-", "_", ".", "task", "-task-", "-task", "locked", "output", "workspace"}

// candidateNames are every concatenation of up to three fragments, then
// some random longer ones (a fixed seed: the same names every run).
func candidateNames() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	var walk func(prefix string, depth int)
	walk = func(prefix string, depth int) {
		if prefix != "" {
			add(prefix)
		}
		if depth == 3 {
			return
		}
		for _, f := range nameFragments {
			walk(prefix+f, depth+1)
		}
	}
	walk("", 0)
	r := rand.New(rand.NewPCG(19, 7))
	for range 300 {
		var b strings.Builder
		for range 2 + r.IntN(6) {
			b.WriteString(nameFragments[r.IntN(len(nameFragments))])
		}
		add(b.String())
	}
	return out
}

// derived records which (sandbox, task, profile, object) each derived name
// stands for, and fails the test when one name stands for two.
type derived struct {
	t     *testing.T
	owner map[string]string
	fails map[string]int // by kind
}

func (d *derived) add(kind, name, owner string) {
	key := kind + " " + name
	if prev, ok := d.owner[key]; ok && prev != owner {
		if d.fails[kind]++; d.fails[kind] <= 3 {
			d.t.Errorf("%s %q is both %s and %s", kind, name, prev, owner)
		}
		return
	}
	d.owner[key] = owner
}

// profileVolumes are the Docker names of the volumes that profile p's
// compose file declares in compose project project (compose names a volume
// PROJECT_KEY), with the directory each is mounted at.
func profileVolumes(cfg *config.Config, p *config.Profile, project string) map[string]string {
	pp := profilePlan(cfg, p, AgentStateVolume)
	out := map[string]string{}
	ms := pp.Mounts
	if p.Locked {
		ms = append(ms, initMounts(p.Name, cfg.Workspace)...)
	}
	// What agentbox itself calls them (collecting a task's branch or its
	// output) is what compose does.
	keys := map[string]string{cfg.Workspace: WorkspaceVolume, OutputDir: OutputVolume, CloneDir: LockedVolume, cfg.Agent.StateDir: AgentStateVolume}
	for _, m := range ms {
		if m.Type == "volume" {
			name := project + "_" + m.Source
			key := keys[m.Target]
			if p.Locked && m.Target == cfg.Workspace {
				key = LockedVolume
			}
			if v := Volume(project, p.Name, key); v != name {
				panic(fmt.Sprintf("Volume(%q, %q, %q) = %q; compose names it %q", project, p.Name, key, v, name))
			}
			out[name] = m.Target
		}
	}
	return out
}

// TestDerivedNamesInjective: no name agentbox derives (or has compose
// derive) for one sandbox, task, profile or volume is the name it derives
// for another. Compose projects, containers and networks are one per
// sandbox or task; a volume is one per sandbox or task, profile and
// directory. Names are made of agentbox's separators (-task-, _, -) so
// that the collisions that would exist are found.
func TestDerivedNamesInjective(t *testing.T) {
	// The case: a sandbox named X-task-Y was sandbox X's task Y.
	if err := validate.ProjectName(TaskProject("x", "y")); err == nil {
		t.Errorf("a sandbox may be named %s, the project of sandbox x's task y", TaskProject("x", "y"))
	}
	var sandboxes, tasks, profiles []string
	profileName := regexp.MustCompile("^" + config.ProfileGrammar + "$")
	for _, s := range candidateNames() {
		if validate.ProjectName(s) == nil {
			sandboxes = append(sandboxes, s)
		}
		if TaskName.MatchString(s) {
			tasks = append(tasks, s)
		}
		if profileName.MatchString(s) && !slices.Contains(config.BuiltinProfiles, s) {
			profiles = append(profiles, s)
		}
	}

	if len(sandboxes) < 500 || len(tasks) < 500 || len(profiles) < 400 {
		t.Fatalf("only %d sandbox, %d task and %d profile names", len(sandboxes), len(tasks), len(profiles))
	}
	d := &derived{t: t, owner: map[string]string{}, fails: map[string]int{}}
	defer func() {
		t.Logf("%d names of %d sandboxes, %d tasks, %d profiles", len(d.owner), len(sandboxes), len(tasks), len(profiles))
	}()
	services := []string{"egress", "agent", "workspace-init"}
	// Projects, their containers and networks: every sandbox with every
	// third task.
	for _, s := range sandboxes {
		for j, task := range append([]string{""}, tasks...) {
			if j%25 != 0 && len(task) > 4 {
				continue
			}
			project, owner := s, "sandbox "+s
			if task != "" {
				project, owner = TaskProject(s, task), fmt.Sprintf("task %s of sandbox %s", task, s)
			}
			d.add("compose project", project, owner)
			d.add("network", project+"_default", owner)
			for _, svc := range services {
				d.add("container", project+"-"+svc+"-1", owner+", service "+svc)
			}
		}
	}
	// Volumes: fewer sandboxes and tasks, every profile: the built-ins,
	// and each custom name from locked or from another built-in.
	var profs []config.Profile
	for _, name := range slices.Concat(config.BuiltinProfiles, profiles) {
		switch name {
		case config.ProfileBalanced, config.ProfileOpen:
			profs = append(profs, config.Profile{Name: name})
		case config.ProfileLocked:
			profs = append(profs, config.Profile{Name: name, Locked: true})
		default:
			profs = append(profs, config.Profile{Name: name}, config.Profile{Name: name, Locked: true})
		}
	}
	// Generated files: a profile's firewall directory is no file of
	// balanced's (which lives where it always did), and its compose file
	// is its own.
	fw, err := firewall.Render(firewall.Policy{Mode: firewall.ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	for name := range fw {
		d.add("generated file", EgressDir+"/"+name, "balanced's firewall")
	}
	d.add("generated file", ProfileSelector, "the profile selector")
	for _, name := range slices.Concat(config.BuiltinProfiles, profiles) {
		if name != config.ProfileBalanced {
			d.add("generated file", ProfileEgressDir(name), "profile "+name+"'s firewall")
		}
		d.add("generated file", ProfileCompose(&config.Config{DefaultProfile: "none"}, name), "profile "+name+"'s compose file")
	}
	cfg := &config.Config{Workspace: "/workspace", Agent: catalog.Agent{StateDir: "/home/agent/.state"}}
	volumes := func(s, task string, p config.Profile) {
		project := s
		if task != "" {
			project = TaskProject(s, task)
		}
		p.Mode = firewall.ModeNone
		for vol, target := range profileVolumes(cfg, &p, project) {
			d.add("volume", vol, target+" of profile "+p.Name+" of sandbox "+s+" task "+task)
		}
	}
	// Every profile in a few projects; a few profiles in many projects.
	every := func(list []string, n int) []string {
		var out []string
		for i := 0; i < len(list); i += n {
			out = append(out, list[i])
		}
		return out
	}
	var few []config.Profile
	for k, p := range profs {
		if k < 3 || k%97 == 0 {
			few = append(few, p)
		}
	}
	for _, c := range []struct {
		sandboxes, tasks []string
		profs            []config.Profile
	}{
		{every(sandboxes, 251), every(tasks, 150), profs},
		{every(sandboxes, 17), every(tasks, 29), few},
	} {
		for _, s := range c.sandboxes {
			for _, task := range append([]string{""}, c.tasks...) {
				for _, p := range c.profs {
					volumes(s, task, p)
				}
			}
		}
	}
}
