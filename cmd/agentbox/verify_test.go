package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
	"github.com/agentbox-dev/agentbox/verify"
)

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
  "version --format") echo 28.2.2; exit 0 ;;
  "ps --filter") echo "egress-id balanced"; exit 0 ;; # the sandbox runs
esac
shift 5 # compose -f FILE -p NAME
case "$1" in
  exec) # exec -T -e NAME=VALUE... agent bash -s -- PHASE
    shift 2
    while [ "$1" = -e ]; do export "$2"; shift 2; done
    shift # agent
    exec unshare --net bash -c 'ip link set lo up && exec "$@"' _ "$@" ;;
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
		"read-only git database", "workspace is a clone", "host git config", "hidden files", "unlisted name", "memory limit", "pids limit", "workspace"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	// On a bare host: the workspace keeps its file; there is no git
	// database at the origin and the workspace is no clone, so those probes
	// fail rather than pass for want of something to try.
	var rows []string
	for _, line := range strings.Split(stdout, "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	table := strings.Join(rows, "\n")
	for _, want := range []string{
		"PASS persistence workspace",
		"FAIL files read-only git database",
		"FAIL files workspace is a clone",
		"FAIL files host git config",
		"FAIL files hidden files",
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
	// The targets go by name; the phase is the one argument. agent: none
	// has no state directory, and its variable is not passed.
	for _, want := range []string{"exec -T -e AGENTBOX_VERIFY_WORKSPACE=" + dir + " -e AGENTBOX_VERIFY_ALLOWED=127.0.0.1:3 -e AGENTBOX_VERIFY_UNLISTED_NAME=unlisted.invalid ",
		" -e AGENTBOX_VERIFY_PIDS=32 ", " agent bash -s -- all\n", " agent bash -s -- check\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("docker's arguments lack %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "AGENTBOX_VERIFY_STATE_DIR") {
		t.Errorf("an empty optional variable was passed:\n%s", data)
	}
}

// TestVerifyScriptReadsVerifyVars: verify.sh reads every variable of
// verifyVars, a required one as ${NAME:?} and an optional one as ${NAME:-},
// and no other AGENTBOX_VERIFY_ variable.
// TestVerifyNeedsEveryProbe: a docker that prints nothing (or a script that
// stops early) is a failure naming what did not report, not "all 0 probes
// passed".
func TestVerifyNeedsEveryProbe(t *testing.T) {
	dir := project(t, "agent-claude")
	fakeDocker(t, "ok") // compose exec prints nothing and exits 0
	t.Setenv("FAKE_PROFILE", "balanced")
	stdout, stderr, code := runIn(t, dir, "verify")
	if code != exitError {
		t.Fatalf("exit %d, want %d; stderr %q\n%s", code, exitError, stderr, stdout)
	}
	for _, want := range []string{"did not report", "files/host paths", "network/allowed name", "resources/memory limit"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %q", want, stderr)
		}
	}
	if strings.Contains(stderr, "passed") {
		t.Errorf("stderr claims success: %q", stderr)
	}
}

// TestVerifyChecksLinksBeforeRecreating: verify recreates the agent
// container after the probes ran, time enough for the agent to leave a
// link; the mount sources are checked again right before.
func TestVerifyChecksLinksBeforeRecreating(t *testing.T) {
	dir := setupCase(t, filepath.Join(goldenDir, "agent-claude"))
	if _, stderr, code := runIn(t, dir, "generate"); code != exitOK {
		t.Fatalf("generate: %d %s", code, stderr)
	}
	// The fake docker answers every probe, and during the "write" phase
	// puts a link where .git was (the project changes while verify runs).
	var rows strings.Builder
	for _, p := range verify.Table {
		if p.Phase == "all" && p.Expected(&config.Config{}, &config.Profile{Name: "balanced"}) {
			fmt.Fprintf(&rows, "PASS\\t%s\\t%s\\tt\\th\\n", p.Area, p.Name)
		}
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "argv.log")
	writeFile(t, filepath.Join(bin, "docker"), []byte(`#!/bin/bash
echo "$*" >> '`+log+`'
case "$1 $2" in
  "compose version") echo 2.40.3; exit 0 ;;
  "version --format") echo 28.2.2; exit 0 ;;
  "ps --filter") echo "egress-id balanced"; exit 0 ;; # the sandbox runs
esac
case "$*" in
  *" -- all") printf '`+rows.String()+`' ;;
  *" -- write") mv '`+dir+`/.git' '`+dir+`/git.old' && ln -s /etc '`+dir+`/.git' ;;
esac
exit 0
`))
	os.Chmod(filepath.Join(bin, "docker"), 0o755)
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	_, stderr, code := runIn(t, dir, "verify")
	if want := `".git" is a symbolic link to "/etc"`; code != exitError || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitError, want)
	}
	data, _ := os.ReadFile(log)
	if !strings.Contains(string(data), " -- write\n") {
		t.Fatalf("the write phase did not run:\n%s", data)
	}
	if strings.Contains(string(data), "--force-recreate") {
		t.Errorf("verify recreated the agent container through a link:\n%s", data)
	}
}

// TestVerifyPidsProbeIsQuick runs the privileges probes as an unprivileged
// user whose process limit (RLIMIT_NPROC, standing in for the container's
// pids limit) stops the spawn: the probe must report where fork failed
// within seconds. bash retries a failed fork for 15 s.
// TestVerifyLockedProbes runs the files and network probes of a locked
// profile as an unprivileged user on this host: the workspace (root's) is
// refused, the output directory written, the root file system is not
// read-only here (so that probe fails), and under network mode none a name
// that resolves is a failure.
// TestVerifyMemoryProbePast2GiB runs the memory probe on this host in a
// memory cgroup of its own whose limit is above 2 GiB: one read(2) returns
// at most 2 GiB, so a probe that allocates with a single read stays under
// such a limit (the default memory: 4g among them) and reports a failure
// where the limit holds. It allocates about 2.6 GiB for a second.
// memoryCgroup makes a memory cgroup (v1 or v2) limited to limit bytes,
// removed at the end of the test, or skips the test where there is none.
// TestVerifyOfflineSaysNoNetwork runs the network probes in a network
// namespace with loopback alone, as on a machine offline: a name that does
// not resolve for want of an upstream, and an address with no route, read
// "no network/upstream", never "refused" (bash's own words for a name it
// cannot resolve are "Invalid argument").
// TestVerifyHelpListsDefaultTargets: verify --help names every default
// target of the network probes, from the constants the probes use.
func TestVerifyHelpListsDefaultTargets(t *testing.T) {
	stdout, stderr, code := runIn(t, t.TempDir(), "verify", "--help")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range append(slices.Clone(config.DefaultUnlistedNames), config.DefaultUnlistedAddress,
		"resolver          "+config.DefaultResolver, config.DefaultIPv6Address, config.DefaultMetadataAddress,
		"the first allowed name") {
		if !strings.Contains(stdout, want) {
			t.Errorf("verify --help does not name %q:\n%s", want, stdout)
		}
	}
}
