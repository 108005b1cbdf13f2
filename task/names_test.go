package task

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestNames: the recorded tasks' names, sorted, all or the running ones;
// a record with a name that is not a task's is left out.
func TestNames(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	if got := Names("acme", false); got != nil {
		t.Errorf("no records: %q", got)
	}
	now := time.Now()
	for i, r := range []*Record{
		{Name: "zeta", State: StateRunning},
		{Name: "alpha", State: StateExited},
		{Name: "mid", State: StateRunning},
		{Name: "Bad Name", State: StateRunning}, // in directory "odd"
	} {
		dirName := r.Name
		if i == 3 {
			dirName = "odd"
		}
		dir, err := Dir("acme", dirName)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		r.Started = now.Add(time.Duration(i) * time.Second)
		data, _ := json.Marshal(r)
		if err := os.WriteFile(filepath.Join(dir, "task.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := Names("acme", false), []string{"alpha", "mid", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("all: %q, want %q", got, want)
	}
	if got, want := Names("acme", true), []string{"mid", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("running: %q, want %q", got, want)
	}
}
