package task

import (
	"strings"
	"testing"
)

// TestJobName: a Job name is a label value, 63 characters at most.
func TestJobName(t *testing.T) {
	if n, err := JobName("acme", "fix-1"); err != nil || n != "acme-task-fix-1" {
		t.Errorf("%q %v", n, err)
	}
	if _, err := JobName(strings.Repeat("a", 20), strings.Repeat("b", 40)); err == nil {
		t.Error("a 66-character Job name was accepted")
	}
}
