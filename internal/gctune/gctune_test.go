package gctune

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

// The package's init set the collector, unless the environment did; run
// again as a child with GOGC and GOMEMLIMIT set, it leaves them be.
func TestInit(t *testing.T) {
	if os.Getenv("GCTUNE_CHILD") == "1" {
		t.Logf("gc=%d limit=%d", debug.SetGCPercent(-1), debug.SetMemoryLimit(-1))
		return
	}
	_, gogc := os.LookupEnv("GOGC")
	_, gomem := os.LookupEnv("GOMEMLIMIT")
	if p := debug.SetGCPercent(percent); !gogc && p != percent {
		t.Errorf("GC percent %d, want %d", p, percent)
	}
	if l := debug.SetMemoryLimit(-1); !gomem && l != limit {
		t.Errorf("memory limit %d, want %d", l, limit)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInit$", "-test.v")
	cmd.Env = append(os.Environ(), "GCTUNE_CHILD=1", "GOGC=150", "GOMEMLIMIT=1GiB")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "gc=150 limit=1073741824") {
		t.Errorf("with GOGC and GOMEMLIMIT set: %v\n%s", err, out)
	}
}
