package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
)

func TestSchemaCmd(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	c := newSchemaCmd(&stdout)
	c.SetArgs([]string{}) // not nil: cobra would read os.Args
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), config.JSONSchema()) {
		t.Errorf("agentbox schema printed:\n%s", stdout.String())
	}
}

func TestSchemaCmdRejectsArgs(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	c := newSchemaCmd(&stdout)
	c.SetArgs([]string{"extra"})
	c.SetErr(&stderr)
	c.SilenceUsage = true
	if err := c.Execute(); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("err = %v, want an unknown command", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q", stdout.String())
	}
}

// TestSchemaCommandRegistered runs `agentbox schema` through run.
func TestSchemaCommandRegistered(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := runArgs(t, []string{"schema"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), config.JSONSchema()) || stderr.Len() != 0 {
		t.Errorf("stdout:\n%s\nstderr %q", stdout.String(), stderr.String())
	}
}
