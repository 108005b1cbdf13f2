// Package ci holds the tests of CI's own scripts.
package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The output of a real `go test -v` run whose failing subtest ran commands
// and logged between its errors: failures.sh prints that subtest's errors
// and notes with their further lines (the stderr of a failed command), not
// its commands and their output, timings or the passing subtest's lines.
func TestFailuresDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.invalid/digest\n\ngo 1.22\n")
	write("x_test.go", `package digest

import "testing"

func TestAll(t *testing.T) {
	t.Run("Good", func(t *testing.T) { t.Logf("a note of the good one") })
	t.Run("Bad", func(t *testing.T) {
		t.Logf("$ docker ps  [exit 0, 0.1 s]\nCONTAINER ID   IMAGE")
		t.Logf("e2e timing: something                 1.0 s")
		t.Errorf("the summary: %s", "wrong")
		t.Errorf("agentbox run: exit 1\n--- stderr:\nagentbox: the pod cannot start")
		t.Logf("a note after the error")
	})
	t.Logf("the parent's closing line")
}
`)
	cmd := exec.Command("go", "test", "-v", "-count=1", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the sample test passed:\n%s", out)
	}
	log := filepath.Join(dir, "log")
	write("log", string(out))
	digest, err := exec.Command("bash", "failures.sh", log).CombinedOutput()
	if err != nil {
		t.Fatalf("failures.sh: %v\n%s", err, digest)
	}
	got := string(digest)
	for _, want := range []string{"(2 failing)", "--- TestAll/Bad:", "the summary: wrong", "a note after the error",
		"agentbox: the pod cannot start"} {
		if !strings.Contains(got, want) {
			t.Errorf("the digest lacks %q:\n%s\nof:\n%s", want, got, out)
		}
	}
	for _, not := range []string{"docker ps", "CONTAINER ID", "e2e timing", "the good one", "--- TestAll/Good"} {
		if strings.Contains(got, not) {
			t.Errorf("the digest holds %q:\n%s", not, got)
		}
	}
}
