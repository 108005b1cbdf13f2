package verify

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	ps, err := Parse([]byte("PASS\tfiles\tdocker socket\tlook\tabsent\nFAIL\tnetwork\tIPv6\tconnect\tconnected\n\n"))
	if err != nil || len(ps) != 2 || ps[1].Result != "FAIL" || ps[1].Happened != "connected" {
		t.Fatalf("%+v %v", ps, err)
	}
	for _, bad := range []string{"PASS\tonly\tthree", "MAYBE\ta\tb\tc\td", "garbage"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestVerifyScriptParses(t *testing.T) {
	t.Parallel()
	if err := checks.Shell([]byte(Script), "verify.sh"); err != nil {
		t.Fatal(err)
	}
}

func TestScriptReadsVars(t *testing.T) {
	t.Parallel()
	read := map[string]string{}
	for _, m := range regexp.MustCompile(`\$\{(AGENTBOX_VERIFY_[A-Z0-9_]+)(:[?-])`).FindAllStringSubmatch(Script, -1) {
		if prev, ok := read[m[1]]; ok && prev != m[2] {
			t.Errorf("verify.sh reads %s both as %s and %s", m[1], prev, m[2])
		}
		read[m[1]] = m[2]
	}
	if n := len(regexp.MustCompile(`AGENTBOX_VERIFY_[A-Z0-9_]+`).FindAllString(Script, -1)); n != len(read) {
		t.Errorf("verify.sh names AGENTBOX_VERIFY_ variables %d times, but reads %d once each as ${NAME:?} or ${NAME:-}", n, len(read))
	}
	for _, v := range Vars {
		want := ":?"
		if v.Optional {
			want = ":-"
		}
		switch got, ok := read[v.Name]; {
		case !ok:
			t.Errorf("verify.sh does not read %s", v.Name)
		case got != want:
			t.Errorf("verify.sh reads %s as ${%s%s}, want ${%s%s}", v.Name, v.Name, got, v.Name, want)
		}
		delete(read, v.Name)
	}
	for name := range read {
		t.Errorf("verify.sh reads %s, which Vars does not list (agentbox never passes it)", name)
	}
}

func TestCheckProbes(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{}
	bal := &config.Profile{Name: "balanced"}
	row := func(area, name string) Probe { return Probe{"PASS", area, name, "tried", "happened"} }
	var all []Probe
	for _, p := range Table {
		if p.Phase == "all" && p.Expected(cfg, bal) {
			all = append(all, row(p.Area, p.Name))
		}
	}
	if len(all) < 10 {
		t.Fatalf("only %d probes in phase all", len(all))
	}
	if err := Check("all", cfg, bal, all); err != nil {
		t.Errorf("every probe: %v", err)
	}
	for _, tt := range []struct {
		name   string
		probes []Probe
		want   string
	}{
		{"none", nil, "did not report"},
		{"one missing", all[1:], "did not report 1 of"},
		{"twice", append(all[:len(all):len(all)], all[0]), `"files/host paths" twice`},
		{"unknown", append(all[:len(all):len(all)], row("files", "something new")), `unexpected probe "files/something new"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := Check("all", cfg, bal, tt.probes); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// The state volume's probe is expected only when the agent has one.
	check := []Probe{row("persistence", "outside the workspace"), row("persistence", "workspace")}
	if err := Check("check", cfg, bal, check); err != nil {
		t.Errorf("no state volume: %v", err)
	}
	cfg.Agent.StateDir = "/home/agent/.claude"
	if err := Check("check", cfg, bal, check); err == nil || !strings.Contains(err.Error(), "persistence/state volume") {
		t.Errorf("state volume: err = %v", err)
	}
	if err := Check("write", cfg, bal, nil); err != nil {
		t.Errorf("write: %v", err)
	}
}

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
	cmd.Stdin = strings.NewReader(Script)
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
		cmd.Stdin = strings.NewReader(Script)
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
	cmd.Stdin = strings.NewReader(Script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "PASS\tresources\tmemory limit\tallocate 2624 MiB\tkilled") {
		t.Fatalf("the memory probe did not go past a limit of 2.5 GiB:\n%s", out)
	}
}

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
		cmd.Stdin = strings.NewReader(Script)
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
