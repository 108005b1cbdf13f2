package generator

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/checks"
	"github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"
)

var ciCases = map[string]WorkflowOptions{
	"root.yml":   {Dir: ".", Version: "v1.2.3"},
	"subdir.yml": {Dir: "tools/sand-box_1.0", Version: "v0.0.0-20260101120000-0123456789ab"},
	"widen.yml":  {Dir: "box", Version: "v1.2.3", FailOn: FailOnWiden},
}

// TestGitHubWorkflowGolden: the rendered workflow, byte for byte, rendered
// twice the same.
func TestGitHubWorkflowGolden(t *testing.T) {
	for name, o := range ciCases {
		t.Run(name, func(t *testing.T) {
			got, err := RenderGitHubWorkflow(o)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := RenderGitHubWorkflow(o)
			if !bytes.Equal(got, again) {
				t.Error("two renders differ")
			}
			if !IsCIWorkflow(got) {
				t.Errorf("the workflow does not start with its header:\n%s", got)
			}
			golden.CompareFile(t, filepath.Join("testdata", "ci", name), got)
		})
	}
}

// TestGitHubWorkflowActionlint: actionlint finds nothing.
func TestGitHubWorkflowActionlint(t *testing.T) {
	lintWorkflows(t, "")
}

// TestGitHubWorkflowShellcheck: nor does it with shellcheck on the scripts.
func TestGitHubWorkflowShellcheck(t *testing.T) {
	lintWorkflows(t, testenv.RequireProgram(t, "shellcheck"))
}

func lintWorkflows(t *testing.T, shellcheck string) {
	for name, o := range ciCases {
		t.Run(name, func(t *testing.T) {
			data, err := RenderGitHubWorkflow(o)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{Shellcheck: shellcheck, Color: actionlint.ColorOptionKindNever})
			if err != nil {
				t.Fatal(err)
			}
			errs, err := l.Lint(GitHubWorkflow, data, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Errorf("actionlint: %d:%d: %s [%s]", e.Line, e.Column, e.Message, e.Kind)
			}
		})
	}
}

type ghWorkflow struct {
	Permissions any
	Env         map[string]string
	Jobs        map[string]struct {
		Permissions map[string]string
		Env         map[string]string
		Steps       []struct {
			Uses string
			Run  string
			Env  map[string]string
		}
	}
}

var pinnedUses = regexp.MustCompile(`(?m)^\s+- uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40}) # (v\d+\.\d+\.\d+)$`)

// TestGitHubWorkflowScripts: the rules actionlint does not check. Every
// script parses as bash and holds no ${{ }} expression (values reach it
// through env:); every action is pinned by commit, with its tag; nothing is
// permitted by default, each job its least.
func TestGitHubWorkflowScripts(t *testing.T) {
	data, err := RenderGitHubWorkflow(ciCases["subdir.yml"])
	if err != nil {
		t.Fatal(err)
	}
	var wf ghWorkflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	if m, ok := wf.Permissions.(map[string]any); !ok || len(m) != 0 {
		t.Errorf("top-level permissions = %v, want {}", wf.Permissions)
	}
	if wf.Env["AGENTBOX_DIR"] != "tools/sand-box_1.0" || wf.Env["AGENTBOX_VERSION"] != "v0.0.0-20260101120000-0123456789ab" {
		t.Errorf("env = %v", wf.Env)
	}
	wantPerms := map[string]string{
		"check":   "contents=read",
		"comment": "pull-requests=write",
		"bump":    "contents=write pull-requests=write",
	}
	for name, job := range wf.Jobs {
		var perms []string
		for _, k := range []string{"contents", "pull-requests"} {
			if v, ok := job.Permissions[k]; ok {
				perms = append(perms, k+"="+v)
			}
		}
		if got := strings.Join(perms, " "); got != wantPerms[name] || len(perms) != len(job.Permissions) {
			t.Errorf("job %s: permissions %v, want %s", name, job.Permissions, wantPerms[name])
		}
		for i, s := range job.Steps {
			if strings.Contains(s.Run, "${{") {
				t.Errorf("job %s step %d: an expression in run:\n%s", name, i, s.Run)
			}
			if s.Run != "" {
				if err := checks.Shell([]byte(s.Run), name); err != nil {
					t.Errorf("job %s step %d: %v", name, i, err)
				}
			}
		}
	}
	uses := strings.Count(string(data), "uses:")
	pinned := pinnedUses.FindAllStringSubmatch(string(data), -1)
	if uses != 4 || len(pinned) != uses {
		t.Errorf("%d uses:, %d pinned by commit with a tag", uses, len(pinned))
	}
	for _, m := range pinned {
		a := Action{m[1], m[3], m[2]}
		if a != Checkout && a != SetupGo {
			t.Errorf("uses %v, not from the table of pins", a)
		}
	}
}

// TestCIVersions: the workflow's Go is the go line of go.mod, and its
// package is this module's command.
func TestCIVersions(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?$`).FindSubmatch(mod)
	if m == nil || string(m[1])+".x" != GoVersion {
		t.Errorf("go.mod's go line %q, GoVersion %q", m, GoVersion)
	}
	if !bytes.HasPrefix(mod, []byte("module "+strings.TrimSuffix(Package, "/cmd/agentbox")+"\n")) {
		t.Errorf("go.mod's module is not that of %s", Package)
	}
	if _, err := os.Stat("../cmd/agentbox/main.go"); err != nil {
		t.Error(err)
	}
}

func TestValidateCIDir(t *testing.T) {
	for dir, ok := range map[string]bool{
		".": true, "a": true, "a/b": true, "A_1/b.c-d": true, "sub/.x": false,
		"": false, "./a": false, "a/..": false, "../a": false, "a//b": false, "/a": false, "a/": false,
		"-a": false, ".a": false, "a b": false, "a$b": false, "a'b": false, "a\nb": false, "a\"b": false,
		"a:b": false, "a#b": false, "a*b": false, "é": false,
	} {
		if err := ValidateCIDir(dir); (err == nil) != ok {
			t.Errorf("ValidateCIDir(%q) = %v, want ok=%v", dir, err, ok)
		}
	}
}

func TestValidateVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"v1.2.3": true, "v0.0.0-20260101120000-0123456789ab": true, "v1.2.3-rc.1": true,
		"v1.2.4-0.20260101120000-0123456789ab": true,
		"":                                     false, "1.2.3": false, "v1.2": false, "v1.2.3+dirty": false, "latest": false,
		"main": false, "v01.2.3": false, "v1.2.3 ": false, "v1.2.3\n": false, "v1.2.3-": false, "v1.2.3-a..b": false,
		"v1.2.3-$(x)": false,
	} {
		if err := ValidateVersion(v); (err == nil) != ok {
			t.Errorf("ValidateVersion(%q) = %v, want ok=%v", v, err, ok)
		}
	}
	if _, err := RenderGitHubWorkflow(WorkflowOptions{Dir: ".", Version: "v1.2.3+dirty"}); err == nil {
		t.Error("rendered with an invalid version")
	}
	if _, err := RenderGitHubWorkflow(WorkflowOptions{Dir: "a b", Version: "v1.2.3"}); err == nil {
		t.Error("rendered with an invalid directory")
	}
}

// gateWorkflow is what TestGitHubWorkflowGate reads of the workflow.
type gateWorkflow struct {
	On   map[string]any
	Env  map[string]string
	Jobs map[string]struct {
		If          string
		Permissions map[string]string
		Steps       []gateStep
	}
}

type gateStep struct {
	ID, Name, Uses, Run, If string
	WorkingDirectory        string `yaml:"working-directory"`
	With                    map[string]string
	Env                     map[string]string
}

// TestGitHubWorkflowGate: the threat model of the README's "CI" section,
// read from the workflow. The check runs on pull_request_target, so from the
// base branch's definition, which the pull request cannot change; agentbox is
// installed from the version the base names before anything of the pull
// request is on disk; the pull request's merge commit is checked out into a
// directory of its own, without credentials, and only read: no step runs a
// program from it, no local action, no cache. The check's token reads
// contents only; the comment job, the one that writes, checks out nothing.
// With --fail-on widen, and only then, a widening fails the check.
func TestGitHubWorkflowGate(t *testing.T) {
	for name, o := range ciCases {
		t.Run(name, func(t *testing.T) {
			data, err := RenderGitHubWorkflow(o)
			if err != nil {
				t.Fatal(err)
			}
			var wf gateWorkflow
			if err := yaml.Unmarshal(data, &wf); err != nil {
				t.Fatal(err)
			}
			if _, ok := wf.On["pull_request_target"]; !ok || len(wf.On) != 3 {
				t.Errorf("on: %v, want pull_request_target, schedule, workflow_dispatch", wf.On)
			}
			if wf.Env["AGENTBOX_VERSION"] != o.Version {
				t.Errorf("AGENTBOX_VERSION = %q, want %q", wf.Env["AGENTBOX_VERSION"], o.Version)
			}
			if bytes.Contains(data, []byte("actions/cache")) || bytes.Contains(data, []byte("uses: ./")) {
				t.Error("the workflow uses a cache or a local action")
			}
			check := wf.Jobs["check"]
			if check.If != "github.event_name == 'pull_request_target'" {
				t.Errorf("check runs if %q", check.If)
			}
			if len(check.Permissions) != 1 || check.Permissions["contents"] != "read" {
				t.Errorf("check's permissions %v, want contents: read alone", check.Permissions)
			}
			checkGateSteps(t, check.Steps, o)
			for _, job := range []string{"comment", "bump"} {
				if strings.Contains(wf.Jobs[job].If, "pull_request'") {
					t.Errorf("job %s runs on pull_request: %q", job, wf.Jobs[job].If)
				}
			}
			if !strings.Contains(wf.Jobs["bump"].If, "!= 'pull_request_target'") {
				t.Errorf("bump runs if %q", wf.Jobs["bump"].If)
			}
			for _, s := range wf.Jobs["comment"].Steps {
				if s.Uses != "" {
					t.Errorf("the comment job uses %s", s.Uses)
				}
			}
		})
	}
}

// checkGateSteps checks the steps of the check job.
func checkGateSteps(t *testing.T, steps []gateStep, o WorkflowOptions) {
	t.Helper()
	installed, checkedOut, widen := false, false, false
	// What a step may run once the pull request is on disk: agentbox, and
	// git, jq and shell built-ins on what they print.
	runs := regexp.MustCompile(`(?m)^\s*(\./|bash |sh |source |\. |make|go |npm|npx|python|node)`)
	for i, s := range steps {
		switch {
		case strings.HasPrefix(s.Uses, Checkout.Name+"@"):
			if !installed {
				t.Errorf("step %d checks out before agentbox is installed", i)
			}
			checkedOut = true
			if s.With["persist-credentials"] != "false" || s.With["path"] == "" || s.With["path"] == "." {
				t.Errorf("step %d: checkout with %v: want persist-credentials false, a directory of its own", i, s.With)
			}
			if s.With["ref"] != "refs/pull/${{ github.event.pull_request.number }}/merge" || s.With["repository"] != "" {
				t.Errorf("step %d: checks out %q of %q, want the merge ref of this repository", i, s.With["ref"], s.With["repository"])
			}
		case strings.HasPrefix(s.Uses, SetupGo.Name+"@"):
			if s.With["cache"] != "false" || s.With["go-version-file"] != "" {
				t.Errorf("step %d: setup-go with %v: want no cache, the workflow's Go", i, s.With)
			}
		case s.Uses != "":
			t.Errorf("step %d uses %s", i, s.Uses)
		case strings.Contains(s.Run, "go install"):
			installed = true
			if checkedOut || s.WorkingDirectory != "" || !strings.Contains(s.Run, `go install "${AGENTBOX_PACKAGE}@${AGENTBOX_VERSION}"`) {
				t.Errorf("step %d installs agentbox otherwise than from the workflow's version, before the checkout:\n%s", i, s.Run)
			}
		case checkedOut:
			if runs.MatchString(s.Run) {
				t.Errorf("step %d may run a program of the pull request:\n%s", i, s.Run)
			}
			if strings.Contains(s.Run, "--fail-on widen") || strings.Contains(s.Run, "widens") && strings.Contains(s.Run, "exit 1") {
				widen = true
			}
		}
	}
	if !installed || !checkedOut {
		t.Errorf("installed %v, checked out %v", installed, checkedOut)
	}
	if widen != (o.FailOn == FailOnWiden) {
		t.Errorf("fails on a widening: %v, want %v", widen, o.FailOn == FailOnWiden)
	}
}
