package task

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
)

// flags are run's flags for a task t1 on this machine, as the command
// line gives them without options.
func flags() Flags {
	return Flags{Dir: ".", Name: "t1", Ref: "HEAD", Workspace: WorkspaceClone, On: "docker", Argv: []string{"true"}}
}

// isUsage reports whether err is a usage error (a wrong flag).
func isUsage(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

// TestFlagsCheck: each flag alone and the flags that do not go together
// are usage errors, named as run names them; nothing is read.
func TestFlagsCheck(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Flags)
		want string // "": accepted
	}{
		{func(*Flags) {}, ""},
		{func(f *Flags) { f.Name = "egress" }, `invalid task name "egress"`},
		{func(f *Flags) { f.Name = "agent" }, `invalid task name "agent"`},
		{func(f *Flags) { f.Name = "Fix" }, `invalid task name "Fix"`},
		{func(f *Flags) { f.Name = strings.Repeat("a", 41) }, "invalid task name"},
		{func(f *Flags) { f.Workspace = "tmp" }, `invalid --workspace "tmp": want clone or direct`},
		{func(f *Flags) { f.Workspace, f.RefSet = WorkspaceDirect, true }, "--ref names the commit"},
		{func(f *Flags) { f.Workspace = WorkspaceDirect }, ""},
		{func(f *Flags) { f.On = "nomad" }, `invalid --on "nomad"`},
		{func(f *Flags) { f.Namespace = "agents" }, "--context and --namespace go with --on kubernetes"},
		{func(f *Flags) { f.Context = "prod" }, "--context and --namespace go with --on kubernetes"},
		{func(f *Flags) { f.On, f.Workspace = OnKubernetes, WorkspaceDirect }, "--workspace direct runs on this machine's"},
		{func(f *Flags) { f.On, f.Namespace = OnKubernetes, "Agents" }, `invalid --namespace "Agents"`},
		{func(f *Flags) { f.On, f.Context, f.Namespace = OnKubernetes, "prod", "agents" }, ""},
		{func(f *Flags) { f.On, f.Context = OnKubernetes, "-x" }, `invalid --context "-x"`},
		{func(f *Flags) { f.On, f.Context = OnKubernetes, "a\nb" }, "invalid --context"},
		{func(f *Flags) { f.Ref = "" }, `invalid --ref ""`},
		{func(f *Flags) { f.Ref = "--upload-pack=x" }, "invalid --ref"},
		{func(f *Flags) { f.Ref = "a\x00b" }, "invalid --ref"},
	} {
		f := flags()
		tc.edit(&f)
		err := f.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", f, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !isUsage(err)):
			t.Errorf("%+v: %v, want a usage error %q", f, err, tc.want)
		}
	}
}

// TestFlagsCheckNames: a task run was given no name gets one of
// DefaultName's, a valid task name that says when it started.
func TestFlagsCheckNames(t *testing.T) {
	f := flags()
	f.Name = ""
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	if !generator.TaskName.MatchString(f.Name) || !strings.HasPrefix(f.Name, "t-") {
		t.Errorf("default name %q", f.Name)
	}
	at := time.Date(2026, 11, 27, 13, 4, 5, 0, time.FixedZone("CET", 3600))
	if n := DefaultName(at); !strings.HasPrefix(n, "t-1127-120405-") || len(n) != len("t-1127-120405-abcd") {
		t.Errorf("DefaultName = %q, want t-1127-120405-XXXX (UTC)", n)
	}
	if DefaultName(at) == DefaultName(at) && DefaultName(at) == DefaultName(at) {
		t.Error("three names of the same second are one: no random part")
	}
}

// testConfig decodes an agentbox.yaml of a sandbox called name.
func testConfig(t *testing.T, name, yaml string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	cfg, _, err := config.Decode(filepath.Join(dir, config.ConfigFile), []byte("name: "+name+"\n"+yaml), dir)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const clusterYAML = `agent: claude
run:
  timeout: 20m
  max_timeout: 2h
kubernetes:
  namespace: agents
  registry: registry.acme.test:5000/sandboxes
`

// TestFlagsOptions: the flags against the sandbox's configuration: the
// timeout (run.timeout by default, at most run.max_timeout), the profile
// (the default one unless named; one the sandbox has), the workspace a
// profile allows, and what a task on a cluster needs. Each is a usage
// error but the missing kubernetes section, which is agentbox.yaml's.
func TestFlagsOptions(t *testing.T) {
	cfg := testConfig(t, "acme", clusterYAML)
	f := flags()
	o, err := f.Options(cfg)
	want := Options{Dir: ".", Name: "t1", Ref: "HEAD", Argv: []string{"true"}, Profile: cfg.DefaultProfile,
		Timeout: 20 * time.Minute, Workspace: WorkspaceClone, On: "docker"}
	if err != nil || o.Timeout != want.Timeout || o.Profile != want.Profile || o.Name != want.Name || o.Ref != want.Ref ||
		o.Workspace != want.Workspace || o.On != want.On || strings.Join(o.Argv, " ") != "true" || o.Dir != "." {
		t.Errorf("Options() = %+v, %v; want %+v", o, err, want)
	}
	f = flags()
	f.Timeout, f.Profile, f.On, f.Context, f.Namespace = "1h30m", cfg.DefaultProfile, OnKubernetes, "prod", "agents"
	if o, err := f.Options(cfg); err != nil || o.Timeout != 90*time.Minute || o.Context != "prod" || o.Namespace != "agents" {
		t.Errorf("on a cluster: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		cfg   *config.Config
		edit  func(*Flags)
		want  string
		usage bool
	}{
		{cfg, func(f *Flags) { f.Timeout = "3h" }, "--timeout 3h is over run.max_timeout (2h0m0s in agentbox.yaml)", true},
		{cfg, func(f *Flags) { f.Timeout = "1.5h" }, `--timeout "1.5h": invalid duration`, true},
		{cfg, func(f *Flags) { f.Profile = "nope" }, "--profile: ", true},
		{cfg, func(f *Flags) { f.Workspace, f.Profile = WorkspaceDirect, config.ProfileLocked }, "--workspace direct writes the project directory; profile locked keeps it read-only", true},
		{cfg, func(f *Flags) { f.On, f.Profile = OnKubernetes, config.ProfileOpen }, "--on kubernetes runs the default profile (balanced) only", true},
		{testConfig(t, strings.Repeat("a", 20), clusterYAML), func(f *Flags) { f.On, f.Name = OnKubernetes, strings.Repeat("b", 40) }, "", true},
		{testConfig(t, "acme", "agent: claude\n"), func(f *Flags) { f.On = OnKubernetes }, "agentbox.yaml has no kubernetes section", false},
	} {
		f := flags()
		tc.edit(&f)
		_, err := f.Options(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || isUsage(err) != tc.usage {
			t.Errorf("%+v: %v, want %q (usage error: %v)", f, err, tc.want, tc.usage)
		}
	}
	if _, err := (&Flags{Name: strings.Repeat("b", 40), On: "docker"}).Options(testConfig(t, strings.Repeat("a", 20), clusterYAML)); err != nil {
		t.Errorf("a long name on this machine, which has no Job: %v", err)
	}
}
