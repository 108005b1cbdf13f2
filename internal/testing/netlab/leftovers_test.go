package netlab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestRemoveLeftovers checks that what a test process that no longer runs
// left behind is removed, and what a running one owns is kept.
func TestRemoveLeftovers(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "ip")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%s%d-1-", Prefix, gone.Process.Pid)
	alive := fmt.Sprintf("%s%d-1-", Prefix, os.Getppid()) // go test, or a shell
	for _, name := range []string{dead, alive} {
		if _, err := run("ip", "netns", "add", name+"ns"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = run("ip", "netns", "del", name+"ns") })
		dir, err := os.MkdirTemp("", name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
	}

	removeLeftovers()

	for name, want := range map[string]bool{dead: false, alive: true} {
		if _, err := os.Stat("/run/netns/" + name + "ns"); (err == nil) != want {
			t.Errorf("namespace %sns: exists %v, want %v", name, err == nil, want)
		}
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), name+"*"))
		if (len(dirs) == 1) != want {
			t.Errorf("directories %s*: %q, want exists %v", name, dirs, want)
		}
	}
}
