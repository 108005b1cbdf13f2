package egress

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBlockedIn: blocked reads the log of the sandbox or of a task, with
// agentbox.yaml when it loads and without it else, and says when the
// running sandbox predates the generated files (not for a task).
func TestBlockedIn(t *testing.T) {
	p, _ := policyProject(t, "balanced", nil)
	recordUp(t, p)
	rules := filepath.Join(p.Dir, ".agentbox", "egress", "rules.nft")
	data, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rules, append(data, "# changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(`#!/bin/sh
case "$1" in
  ps) echo e1 ;;
  inspect) echo "true 0 running 0001-01-01T00:00:00Z" ;;
  *) exit 1 ;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	const log = "2026-11-22T10:00:01.000000000Z dnsmasq[25]: config a.cdn.example.com is NXDOMAIN\n"
	var opened []string
	open := func(_ context.Context, dir, task string, since time.Time) (io.ReadCloser, error) {
		opened = append(opened, task+" "+since.Format(time.RFC3339))
		if task == "gone" {
			return nil, errors.New("task gone has no egress container")
		}
		return io.NopCloser(strings.NewReader(log)), nil
	}
	ctx := t.Context()
	since := now.Add(-3 * time.Hour)
	v, stale, err := BlockedIn(ctx, open, p.Dir, "", since, true)
	if err != nil || !stale || len(v.Names) != 1 || v.Names[0].Name != "a.cdn.example.com" || len(v.Suggestions) != 1 {
		t.Errorf("the sandbox: %+v, stale %v, %v", v, stale, err)
	}
	if _, stale, err := BlockedIn(ctx, open, p.Dir, "fix-1", time.Time{}, false); err != nil || stale {
		t.Errorf("a task: stale %v, %v", stale, err)
	}
	if v, stale, err := BlockedIn(ctx, open, t.TempDir(), "", time.Time{}, false); err != nil || stale || len(v.Names) != 1 {
		t.Errorf("no agentbox.yaml: %+v, stale %v, %v", v, stale, err)
	}
	if _, _, err := BlockedIn(ctx, open, p.Dir, "gone", time.Time{}, false); err == nil {
		t.Error("a log that cannot be opened")
	}
	if opened[0] != " "+since.Format(time.RFC3339) || len(opened) != 4 {
		t.Errorf("opened %q", opened)
	}
}
