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

// TestReadBlockedGateway: the connections the gateway refused are what
// the sandbox refused too: one row per name, port and reason, counted,
// with the first and last time; admitted connections, and those whose
// name's address did not answer, are not refusals.
func TestReadBlockedGateway(t *testing.T) {
	log := strings.Join([]string{
		`2026-11-27T15:00:01.000000000Z dnsmasq[25]: config a.cdn.example.com is NXDOMAIN`,
		`2026-11-27T15:00:01.000000000Z agentbox-gateway: {"start":1795793687.916,"port":443,"name":"allowed.test","name_bytes":12,"addr":"198.18.0.10","up":80,"down":22,"ms":1,"term":"--","why":"-","dropped":0}`,
		`2026-11-27T15:00:02.000000000Z agentbox-gateway: {"start":1795793687.922,"port":443,"name":"cohost.test","name_bytes":11,"addr":"-","up":79,"down":0,"ms":0,"term":"PR","why":"name","dropped":0}`,
		`2026-11-27T15:00:04.000000000Z agentbox-gateway: {"start":1795793689.000,"port":443,"name":"cohost.test","name_bytes":11,"addr":"-","up":79,"down":0,"ms":0,"term":"PR","why":"name","dropped":0}`,
		`2026-11-27T15:00:04.000000000Z agentbox-gateway: {"start":1795793687.922,"port":443,"name":"-","name_bytes":0,"addr":"-","up":59,"down":0,"ms":0,"term":"PR","why":"no_name","dropped":0}`,
		`2026-11-27T15:00:05.000000000Z agentbox-gateway: {"start":1795793687.930,"port":80,"name":"allowed.test","name_bytes":12,"addr":"198.18.0.10","up":57,"down":0,"ms":4,"term":"SC","why":"-","dropped":0}`,
		``,
	}, "\n")
	v, err := ReadBlocked(io.NopCloser(strings.NewReader(log)), nil, time.Time{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Names) != 1 {
		t.Errorf("names: %+v", v.Names)
	}
	if len(v.Gateway) != 2 {
		t.Fatalf("gateway refusals: %+v", v.Gateway)
	}
	g := v.Gateway[0]
	if g.Name != "cohost.test" || g.Port != 443 || g.Count != 2 || g.Reason != "name" || g.Why == "" ||
		g.First == nil || g.Last == nil || !g.Last.After(*g.First) {
		t.Errorf("first row: %+v", g)
	}
	if g := v.Gateway[1]; g.Name != "" || g.Count != 1 || g.Reason != "no_name" {
		t.Errorf("second row: %+v", g)
	}
}
