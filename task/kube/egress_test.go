package kube

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/task"
)

// TestEgressOfTasks: agentbox allow, requests, approve, blocked and the
// others reach a task on a cluster through kubectl exec and kubectl logs
// on its pod's egress container (with the record's context and
// namespace), and the sandbox and the tasks on this machine through the
// local runner; a task on a cluster runs the default profile.
func TestEgressOfTasks(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agentbox.yaml"), []byte("name: acme\nagent: none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	// The fake kubectl prints its arguments, one a line.
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte("#!/bin/sh\nfor a; do echo \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, rec := range []*task.Record{
		{Name: "cluster", On: task.OnKubernetes, KubeContext: "c1", KubeNamespace: "ns", Pod: "pod1", State: task.StateRunning},
		{Name: "nopod", On: task.OnKubernetes, KubeNamespace: "ns", State: task.StateRunning},
		{Name: "here", State: task.StateRunning, Profile: "open"},
	} {
		if err := rec.Write("acme"); err != nil {
			t.Fatal(err)
		}
	}
	var local []string
	run := EgressRunner(func(_ context.Context, _, name string, args ...string) (string, error) {
		local = append(local, name+":"+strings.Join(args, " "))
		return "local", nil
	})
	ctx := t.Context()
	out, err := run(ctx, dir, "cluster", "grants")
	want := "--context\nc1\n--namespace\nns\nexec\npod1\n-c\negress\n--\n/usr/local/bin/agentbox-egress\ngrants\n"
	if err != nil || out != want {
		t.Errorf("a task on a cluster: %q, %v; want %q", out, err, want)
	}
	if _, err := run(ctx, dir, "nopod", "grants"); err == nil || !strings.Contains(err.Error(), "pod is not known") {
		t.Errorf("a task whose pod is not known: %v", err)
	}
	for _, name := range []string{"", "here", "unknown"} {
		if out, err := run(ctx, dir, name, "grants"); err != nil || out != "local" {
			t.Errorf("task %q: %q, %v", name, out, err)
		}
	}
	if strings.Join(local, ",") != ":grants,here:grants,unknown:grants" {
		t.Errorf("the local runner ran %q", local)
	}

	logs := EgressLog(func(context.Context, string, string, time.Time) (io.ReadCloser, error) {
		return nil, errors.New("local")
	})
	rc, err := logs(ctx, dir, "cluster", time.Date(2026, 11, 27, 10, 0, 0, 5e8, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	want = "--context\nc1\n--namespace\nns\nlogs\npod1\n-c\negress\n--timestamps\n--since-time=2026-11-27T10:00:00Z\n"
	if err != nil || string(data) != want {
		t.Errorf("the log of a task on a cluster: %q, %v; want %q", data, err, want)
	}
	if _, err := logs(ctx, dir, "", time.Time{}); err == nil || err.Error() != "local" {
		t.Errorf("the sandbox's log: %v", err)
	}

	profile := Profile(func(context.Context, string, string) (string, error) { return "local", nil })
	for name, want := range map[string]string{"cluster": "balanced", "here": "local", "": "local"} {
		if got, err := profile(ctx, dir, name); err != nil || got != want {
			t.Errorf("the profile of %q: %q, %v; want %q", name, got, err, want)
		}
	}
}
