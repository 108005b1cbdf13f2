// Package testenv decides what a test does when the machine lacks something
// it needs (root, a program): skip with a clear message on a developer's
// machine, fail under CI (CI=true), where a skip would hide a missing
// install step.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run in CI.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable skips the test, or fails it in CI, saying why.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true and %s: the CI script must install it", why)
	}
	t.Skipf("skipping: %s (CI=true turns this skip into a failure)", why)
}

// RequireRoot skips or fails unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "this test needs root")
	}
}

// RequireProgram returns the path of name, or skips or fails.
func RequireProgram(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, name+" is not installed")
	}
	return p
}
