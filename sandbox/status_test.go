package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStatusOf: the sandbox down, then up from the files agentbox up
// recorded, then from files edited since, then recreated since; and a
// Docker that cannot be asked.
func TestStatusOf(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := generated(t, "agent-claude")
	started := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	var cs []Container
	list := func(_ context.Context, project string) ([]Container, error) {
		if project != "agentbox" {
			t.Errorf("containers of %q", project)
		}
		return cs, nil
	}
	s, err := StatusOf(t.Context(), dir, list)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	if s.Sandbox != "agentbox" || s.Dir != abs || s.Up || s.State != "down" || s.Files != "current" || s.Matches != nil || !s.Since.IsZero() {
		t.Errorf("down: %+v", s)
	}

	cs = []Container{
		{ID: "egress-id", Service: "egress", Running: true, Status: "running", Started: started, Profile: "locked"},
		{ID: "agent-id", Service: "agent", Running: true, Status: "running", Started: started.Add(time.Minute)},
	}
	sum, err := FilesHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	path, _ := UpRecordPath("agentbox")
	data, _ := json.Marshal(UpRecord{Dir: abs, Egress: "egress-id", Files: sum})
	writeFile(t, path, data)
	s, err = StatusOf(t.Context(), dir, list)
	if err != nil || !s.Up || s.State != "up" || s.Profile != "locked" || !s.Since.Equal(started.Add(time.Minute)) || s.Matches == nil || !*s.Matches {
		t.Errorf("up: %+v, %v", s, err)
	}

	rules := filepath.Join(dir, ".agentbox", "egress", "rules.nft")
	data, err = os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, rules, append(data, "# edited\n"...))
	if s, err := StatusOf(t.Context(), dir, list); err != nil || s.Files != "out of date" || s.Matches == nil || *s.Matches {
		t.Errorf("edited: %+v, %v", s, err)
	}
	cs[0].ID = "other-id"
	if s, err := StatusOf(t.Context(), dir, list); err != nil || s.Matches != nil {
		t.Errorf("recreated: %+v, %v", s, err)
	}

	noDocker := errors.New("cannot reach the Docker daemon")
	if _, err := StatusOf(t.Context(), dir, func(context.Context, string) ([]Container, error) { return nil, noDocker }); !errors.Is(err, noDocker) {
		t.Errorf("no docker: %v", err)
	}
}
