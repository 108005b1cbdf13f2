package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/checks"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

func TestParseProbes(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
func TestVerifyScriptReadsVerifyVars(t *testing.T) {
	t.Parallel()
	read := map[string]string{}
	for _, m := range regexp.MustCompile(`\$\{(AGENTBOX_VERIFY_[A-Z0-9_]+)(:[?-])`).FindAllStringSubmatch(verifyScript, -1) {
		if prev, ok := read[m[1]]; ok && prev != m[2] {
			t.Errorf("verify.sh reads %s both as %s and %s", m[1], prev, m[2])
		}
		read[m[1]] = m[2]
	}
	if n := len(regexp.MustCompile(`AGENTBOX_VERIFY_[A-Z0-9_]+`).FindAllString(verifyScript, -1)); n != len(read) {
		t.Errorf("verify.sh names AGENTBOX_VERIFY_ variables %d times, but reads %d once each as ${NAME:?} or ${NAME:-}", n, len(read))
	}
	for _, v := range verifyVars {
		want := ":?"
		if v.optional {
			want = ":-"
		}
		switch got, ok := read[v.name]; {
		case !ok:
			t.Errorf("verify.sh does not read %s", v.name)
		case got != want:
			t.Errorf("verify.sh reads %s as ${%s%s}, want ${%s%s}", v.name, v.name, got, v.name, want)
		}
		delete(read, v.name)
	}
	for name := range read {
		t.Errorf("verify.sh reads %s, which verifyVars does not list (agentbox never passes it)", name)
	}
}

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

func TestCheckProbes(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{}
	bal := &config.Profile{Name: "balanced"}
	row := func(area, name string) probe { return probe{"PASS", area, name, "tried", "happened"} }
	var all []probe
	for _, p := range probeTable {
		if p.phase == "all" && (p.when == nil || p.when(cfg, bal)) {
			all = append(all, row(p.area, p.name))
		}
	}
	if len(all) < 10 {
		t.Fatalf("only %d probes in phase all", len(all))
	}
	if err := checkProbes("all", cfg, bal, all); err != nil {
		t.Errorf("every probe: %v", err)
	}
	for _, tt := range []struct {
		name   string
		probes []probe
		want   string
	}{
		{"none", nil, "did not report"},
		{"one missing", all[1:], "did not report 1 of"},
		{"twice", append(all[:len(all):len(all)], all[0]), `"files/host paths" twice`},
		{"unknown", append(all[:len(all):len(all)], row("files", "something new")), `unexpected probe "files/something new"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkProbes("all", cfg, bal, tt.probes); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// The state volume's probe is expected only when the agent has one.
	check := []probe{row("persistence", "outside the workspace"), row("persistence", "workspace")}
	if err := checkProbes("check", cfg, bal, check); err != nil {
		t.Errorf("no state volume: %v", err)
	}
	cfg.Agent.StateDir = "/home/agent/.claude"
	if err := checkProbes("check", cfg, bal, check); err == nil || !strings.Contains(err.Error(), "persistence/state volume") {
		t.Errorf("state volume: err = %v", err)
	}
	if err := checkProbes("write", cfg, bal, nil); err != nil {
		t.Errorf("write: %v", err)
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
	for _, p := range probeTable {
		if p.phase == "all" && (p.when == nil || p.when(&config.Config{}, &config.Profile{Name: "balanced"})) {
			fmt.Fprintf(&rows, "PASS\\t%s\\t%s\\tt\\th\\n", p.area, p.name)
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
func TestVerifyPidsProbeIsQuick(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "setpriv")
	testenv.RequireProgram(t, "prlimit")
	const limit = 48
	start := time.Now()
	cmd := exec.Command("prlimit", "--nproc="+strconv.Itoa(limit), "--",
		"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--",
		"bash", "-s", "--", "privileges")
	cmd.Env = append(os.Environ(), "AGENTBOX_VERIFY_WORKSPACE=/nonexistent", "AGENTBOX_VERIFY_UNLISTED_NAME=x.invalid",
		"AGENTBOX_VERIFY_UNLISTED_ADDRESS=127.0.0.1:1", "AGENTBOX_VERIFY_RESOLVER=127.0.0.1", "AGENTBOX_VERIFY_IPV6_ADDRESS=[::1]:1",
		"AGENTBOX_VERIFY_METADATA_ADDRESS=127.0.0.1:2", "AGENTBOX_VERIFY_MEMORY_BYTES=1048576",
		"AGENTBOX_VERIFY_PIDS="+strconv.Itoa(limit-16), "AGENTBOX_VERIFY_ORIGIN=/nonexistent", "AGENTBOX_VERIFY_NETWORK=allowlist")
	cmd.Stdin = strings.NewReader(verifyScript)
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !regexp.MustCompile(`PASS\tprivileges\tpids limit\t[^\t]*\tstopped at [0-9]+`).Match(out) {
		t.Fatalf("the pids probe did not stop at the limit:\n%s", out)
	}
	if took > 5*time.Second {
		t.Errorf("the privileges probes took %v; want seconds at most:\n%s", took, out)
	}
}

// TestVerifyLockedProbes runs the files and network probes of a locked
// profile as an unprivileged user on this host: the workspace (root's) is
// refused, the output directory written, the root file system is not
// read-only here (so that probe fails), and under network mode none a name
// that resolves is a failure.
func TestVerifyLockedProbes(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "setpriv")
	// Not t.TempDir: its parent is root's alone (0700).
	dir := func(mode os.FileMode) string {
		d, err := os.MkdirTemp("", "agentbox-verify-locked-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		os.Chmod(d, mode)
		return d
	}
	ws, out, home := dir(0o755), dir(0o777), dir(0o755)
	run := func(phase string, env ...string) string {
		cmd := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--", "bash", "-s", "--", phase)
		cmd.Env = append(os.Environ(), append([]string{"HOME=" + home, "AGENTBOX_VERIFY_WORKSPACE=" + ws,
			"AGENTBOX_VERIFY_UNLISTED_ADDRESS=127.0.0.1:1", "AGENTBOX_VERIFY_RESOLVER=127.0.0.1", "AGENTBOX_VERIFY_IPV6_ADDRESS=[::1]:1",
			"AGENTBOX_VERIFY_METADATA_ADDRESS=127.0.0.1:2", "AGENTBOX_VERIFY_MEMORY_BYTES=1048576", "AGENTBOX_VERIFY_PIDS=64",
			"AGENTBOX_VERIFY_ORIGIN=/nonexistent", "AGENTBOX_VERIFY_OUTPUT=" + out}, env...)...)
		cmd.Stdin = strings.NewReader(verifyScript)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return string(b)
	}
	files := run("files", "AGENTBOX_VERIFY_NETWORK=none", "AGENTBOX_VERIFY_UNLISTED_NAME=x.invalid")
	for _, want := range []string{"PASS\tfiles\tread-only workspace", "FAIL\tfiles\tread-only root", "PASS\tfiles\twritable output"} {
		if !strings.Contains(files, want) {
			t.Errorf("files lack %q:\n%s", want, files)
		}
	}
	if strings.Contains(files, "read-only git database") {
		t.Errorf("a locked profile has no git database to probe:\n%s", files)
	}
	for _, tc := range []struct{ mode, name, want string }{
		{"none", "x.invalid", "PASS\tnetwork\tno name resolves"},
		{"none", "localhost", "FAIL\tnetwork\tno name resolves"},
		{"open", "localhost", "PASS\tnetwork\tevery name resolves"},
		{"open", "x.invalid", "FAIL\tnetwork\tevery name resolves"},
	} {
		got := run("network", "AGENTBOX_VERIFY_NETWORK="+tc.mode, "AGENTBOX_VERIFY_UNLISTED_NAME="+tc.name)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: want %q:\n%s", tc.mode, tc.name, tc.want, got)
		}
	}
}

// TestVerifyMemoryProbePast2GiB runs the memory probe on this host in a
// memory cgroup of its own whose limit is above 2 GiB: one read(2) returns
// at most 2 GiB, so a probe that allocates with a single read stays under
// such a limit (the default memory: 4g among them) and reports a failure
// where the limit holds. It allocates about 2.6 GiB for a second.
func TestVerifyMemoryProbePast2GiB(t *testing.T) {
	testenv.RequireRoot(t)
	if testing.Short() {
		t.Skip("allocates 2.6 GiB")
	}
	const limit = 2<<30 + 512<<20
	cg := memoryCgroup(t, limit)
	cmd := exec.Command("bash", "-c", `echo $$ > "$1/cgroup.procs" && exec bash -s -- resources`, "_", cg)
	cmd.Env = append(os.Environ(), "AGENTBOX_VERIFY_WORKSPACE=/nonexistent", "AGENTBOX_VERIFY_UNLISTED_NAME=x.invalid",
		"AGENTBOX_VERIFY_UNLISTED_ADDRESS=127.0.0.1:1", "AGENTBOX_VERIFY_RESOLVER=127.0.0.1", "AGENTBOX_VERIFY_IPV6_ADDRESS=[::1]:1",
		"AGENTBOX_VERIFY_METADATA_ADDRESS=127.0.0.1:2", "AGENTBOX_VERIFY_MEMORY_BYTES="+strconv.Itoa(limit),
		"AGENTBOX_VERIFY_PIDS=64", "AGENTBOX_VERIFY_ORIGIN=/nonexistent", "AGENTBOX_VERIFY_NETWORK=allowlist")
	cmd.Stdin = strings.NewReader(verifyScript)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "PASS\tresources\tmemory limit\tallocate 2624 MiB\tkilled") {
		t.Fatalf("the memory probe did not go past a limit of 2.5 GiB:\n%s", out)
	}
}

// memoryCgroup makes a memory cgroup (v1 or v2) limited to limit bytes,
// removed at the end of the test, or skips the test where there is none.
func memoryCgroup(t *testing.T, limit int) string {
	t.Helper()
	var parent, file string
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		parent, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes" // v1
	} else if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control"); err == nil && strings.Contains(string(b), "memory") {
		parent, file = "/sys/fs/cgroup", "memory.max" // v2
	} else {
		t.Skip("no memory cgroup controller here")
	}
	dir := filepath.Join(parent, fmt.Sprintf("agentbox-verify-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.Itoa(limit)), 0o644); err != nil {
		t.Fatalf("limiting cgroup %s: %v", dir, err)
	}
	return dir
}

// TestVerifyOfflineSaysNoNetwork runs the network probes in a network
// namespace with loopback alone, as on a machine offline: a name that does
// not resolve for want of an upstream, and an address with no route, read
// "no network/upstream", never "refused" (bash's own words for a name it
// cannot resolve are "Invalid argument").
func TestVerifyOfflineSaysNoNetwork(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "unshare")
	testenv.RequireProgram(t, "ip")
	run := func(mode string) string {
		cmd := exec.Command("unshare", "--net", "bash", "-c", `ip link set lo up && exec bash -s -- network`)
		cmd.Env = append(os.Environ(), "AGENTBOX_VERIFY_WORKSPACE=/nonexistent", "AGENTBOX_VERIFY_UNLISTED_NAME=unlisted.agentbox.test",
			"AGENTBOX_VERIFY_ALLOWED=allowed.agentbox.test:443", "AGENTBOX_VERIFY_UNLISTED_ADDRESS=198.18.0.1:443",
			"AGENTBOX_VERIFY_RESOLVER=127.0.0.1", "AGENTBOX_VERIFY_IPV6_ADDRESS=[2001:db8::1]:443",
			"AGENTBOX_VERIFY_METADATA_ADDRESS=127.0.0.1:2", "AGENTBOX_VERIFY_MEMORY_BYTES=1048576", "AGENTBOX_VERIFY_PIDS=64",
			"AGENTBOX_VERIFY_ORIGIN=/nonexistent", "AGENTBOX_VERIFY_NETWORK="+mode)
		cmd.Stdin = strings.NewReader(verifyScript)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return string(out)
	}
	rows := map[string]string{}
	for _, mode := range []string{"allowlist", "open"} {
		for _, line := range strings.Split(strings.TrimSpace(run(mode)), "\n") {
			if f := strings.Split(line, "\t"); len(f) == 5 {
				rows[mode+" "+f[2]] = f[0] + " " + f[4]
			}
		}
	}
	for _, want := range []struct{ probe, result string }{
		{"allowlist allowed name", "FAIL no network/upstream: allowed.agentbox.test does not resolve (the resolver: connection refused)"},
		{"allowlist unlisted address", "PASS no network/upstream: Network is unreachable in "},
		{"allowlist IPv6", "PASS no network/upstream: Network is unreachable"},
		{"open every name resolves", "FAIL no network/upstream: unlisted.agentbox.test does not resolve (the resolver: connection refused)"},
		{"open public address", "FAIL no network/upstream: Network is unreachable"},
	} {
		if got := rows[want.probe]; !strings.HasPrefix(got, want.result) {
			t.Errorf("%s: got %q, want %q", want.probe, got, want.result)
		}
	}
}

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
