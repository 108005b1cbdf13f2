package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestVersionFlag: --version says what `agentbox version` says.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	var out1, out2, stderr bytes.Buffer
	if code := runArgs(t, []string{"version"}, &out1, &stderr); code != exitOK {
		t.Fatalf("version: exit %d: %s", code, stderr.String())
	}
	if code := runArgs(t, []string{"--version"}, &out2, &stderr); code != exitOK {
		t.Fatalf("--version: exit %d: %s", code, stderr.String())
	}
	if out1.String() != out2.String() || !strings.HasPrefix(out1.String(), "agentbox ") || strings.Contains(out1.String(), "(devel)") {
		t.Errorf("version printed %q, --version %q", out1.String(), out2.String())
	}
}
