package sandbox

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
)

// downProject is the sandbox of project p in dir, on docker answered by a
// FakeRunner.
func downProject(t *testing.T, answers map[string]any) (*Project, *FakeRunner) {
	d, f := fake(t, answers)
	dir := t.TempDir()
	c := Compose{Docker: d, Argv: ComposeArgv("docker", "p", "f.yml"), Env: func(string) ([]string, error) { return nil, nil }}
	return &Project{Dir: dir, Config: &config.Config{Name: "p"}, Profile: "balanced", Compose: c}, f
}

// tasksOf is a Removal.Tasks that lists names as the tasks of project p.
func tasksOf(t *testing.T, names ...string) func(string) ([]string, error) {
	return func(project string) ([]string, error) {
		if project != "p" {
			t.Errorf("the tasks of %q", project)
		}
		return names, nil
	}
}

const ownerQuery = `ps -a --filter label=com.docker.compose.project=p --format {{.Label "com.docker.compose.project.working_dir"}}`

// TestDownImages: down --images removes every tag of the two images, names
// each, and returns the one docker refused with its reason; while the
// sandbox has tasks, nothing at all is removed.
func TestDownImages(t *testing.T) {
	t.Parallel()
	p, f := downProject(t, map[string]any{
		ownerQuery: "",
		"compose -f f.yml -p p down --remove-orphans":                             "",
		"image inspect --format {{range .RepoTags}}{{println .}}{{end}} p-egress": "p-egress:latest\n",
		"image inspect --format {{range .RepoTags}}{{println .}}{{end}} p-agent":  "p-agent:latest\nold:1\n",
		"rmi old:1":           "",
		"rmi p-agent:latest":  errors.New("conflict"),
		"rmi p-egress:latest": "",
	})
	var stderr strings.Builder
	failed, err := Down(context.Background(), p, Removal{Images: true, Tasks: tasksOf(t)}, nil, io.Discard, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"image p-agent:latest not removed: conflict"}; !slices.Equal(failed, want) {
		t.Errorf("failed %q, want %q", failed, want)
	}
	if want := "agentbox: removed image old:1\nagentbox: removed image p-egress:latest\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}

	p, f = downProject(t, map[string]any{ownerQuery: ""})
	_, err = Down(context.Background(), p, Removal{Images: true, Tasks: tasksOf(t, "t1", "t2")}, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not removing anything: tasks t1, t2 use the sandbox's images") {
		t.Errorf("with tasks: %v", err)
	}
	if !slices.Equal(f.Ran, []string{ownerQuery}) {
		t.Errorf("with tasks, docker ran %q", f.Ran)
	}
}

// TestDownPlain: down alone runs compose down, and asks nothing else.
func TestDownPlain(t *testing.T) {
	t.Parallel()
	p, f := downProject(t, map[string]any{"compose -f f.yml -p p down --remove-orphans": ""})
	if failed, err := Down(context.Background(), p, Removal{Tasks: func(string) ([]string, error) { t.Error("down alone asked for the tasks"); return nil, nil }}, nil, io.Discard, io.Discard); err != nil || failed != nil {
		t.Fatal(failed, err)
	}
	if len(f.Ran) != 1 {
		t.Errorf("ran %q", f.Ran)
	}
}
