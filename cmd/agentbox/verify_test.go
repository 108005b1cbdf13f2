package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/checks"
	"github.com/agentbox-dev/agentbox/internal/testenv"
)

func TestParseProbes(t *testing.T) {
	ps, err := parseProbes([]byte("PASS\tfiles\tdocker socket\tlook\tabsent\nFAIL\tnetwork\tIPv6\tconnect\tconnected\n\n"))
	if err != nil || len(ps) != 2 || ps[1].Result != "FAIL" || ps[1].Happened != "connected" {
		t.Fatalf("%+v %v", ps, err)
	}
	for _, bad := range []string{"PASS\tonly\tthree", "MAYBE\ta\tb\tc\td", "garbage"} {
		if _, err := parseProbes([]byte(bad)); err == nil {
			t.Errorf("parseProbes(%q) accepted", bad)
		}
	}
}

func TestVerifyScriptParses(t *testing.T) {
	if err := checks.Shell([]byte(verifyScript), "verify.sh"); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyFlow runs verify against a fake docker whose `compose exec`
// runs the probe script here, in a new network namespace that has only
// loopback (so no probe can send anything off the machine, whatever its
// target): the probes really run, every area reports, and what a bare host
// fails (a memory limit, for one) makes verify exit 1 with every probe.
func TestVerifyFlow(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "unshare")
	testenv.RequireProgram(t, "ip")
	dir := setupCase(t, filepath.Join(goldenDir, "agent-claude"))
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte(`agent: none # no state volume on this host
workspace: {path: "`+dir+`"}
resources: {memory: 16m, pids: 32}
verify:
  allowed: 127.0.0.1:3
  unlisted_name: unlisted.invalid
  unlisted_address: 127.0.0.1:1
  metadata_address: 127.0.0.1:2
  resolver: 127.0.0.1
  ipv6_address: "[::1]:1"
`))
	if _, stderr, code := runIn(t, dir, "generate"); code != exitOK {
		t.Fatal(stderr)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "argv.log")
	script := `#!/bin/bash
echo "$*" >> ` + log + `
case "$1 $2" in
  "compose version") echo 2.40.3; exit 0 ;;
  "info --format") echo 28.2.2; exit 0 ;;
esac
shift 5 # compose -f FILE -p NAME
case "$1" in
  exec) shift 3; exec unshare --net bash -c 'ip link set lo up && exec "$@"' _ "$@" ;; # exec -T agent bash -s -- ...
  up) exit 0 ;;
esac
exit 0
`
	writeFile(t, filepath.Join(bin, "docker"), []byte(script))
	os.Chmod(filepath.Join(bin, "docker"), 0o755)
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("HOME", t.TempDir())

	stdout, stderr, code := runIn(t, dir, "verify")
	if code != exitError || !strings.Contains(stderr, "probes failed") {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"RESULT", "files", "network", "privileges", "resources", "persistence",
		"read-only .git/hooks", "unlisted name", "memory limit", "pids limit", "workspace"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	// On a bare host: the workspace keeps its file, and nothing is mounted
	// read-only, so those probes fail.
	var rows []string
	for _, line := range strings.Split(stdout, "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	table := strings.Join(rows, "\n")
	for _, want := range []string{
		"PASS persistence workspace",
		"FAIL files read-only .git/hooks",
		"PASS network unlisted name",
		"PASS network metadata connect to 127.0.0.1:2",
		"PASS network low ports read net.ipv4.ip_unprivileged_port_start 1024: binding port 53 needs privilege",
		"FAIL network allowed name connect to 127.0.0.1:3",
		"FAIL resources memory limit",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	data, _ := os.ReadFile(log)
	if !strings.Contains(string(data), "up -d --force-recreate --no-deps --wait agent") {
		t.Errorf("verify did not recreate the agent container:\n%s", data)
	}
}
