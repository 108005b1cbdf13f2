package firewall

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEntrypointConstants has bash read the constants block and the names
// of the rendered entrypoint back: each is the Go constant, quoted.
func TestEntrypointConstants(t *testing.T) {
	var vars strings.Builder
	want := map[string]string{
		"PROG": "agentbox-egress", "RULES": RulesPath, "DNSMASQ_CONF": DnsmasqPath,
		"RESOLV_CONF": resolvConf, "RUN_DIR": runDir, "LOCK": lockFile, "READY": readyFile,
		"SERVERS": serversFile, "PID_FILE": pidFile, "FILTER_ADDR": filterAddr,
		"DNS_PORT": fmt.Sprint(dnsPort), "DNS_MIN_PORT": fmt.Sprint(DNSMinPort),
		"TABLE": table, "OUTPUT_CHAIN": outputChain, "INPUT_CHAIN": inputChain,
		"UPSTREAM_V4": upstreamV4, "UPSTREAM_V6": upstreamV6, "COUNTER_PREFIX": counterPrefix,
		"HEALTH_ARG": HealthCommand[1], "PORT_START": Sysctls[0].Key, "PORT_START_WANT": Sysctls[0].Value,
		"PORT_START_PROC": "/proc/sys/net/ipv4/ip_unprivileged_port_start",
		"DNS_UID":         fmt.Sprint(DNSUID), "DEADLINE_EXIT": fmt.Sprint(DeadlineExit),
		"DEADLINE_ENV": DeadlineEnv, "AGENT_UID_ENV": AgentUIDEnv, "DEADLINE_STAY_ENV": DeadlineStayEnv,
		"GRANT_V4": GrantSetV4, "GRANT_V6": GrantSetV6, "GRANT_MAX_SECONDS": fmt.Sprint(GrantMaxSeconds),
	}
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&vars, "printf '%%s=%%s\\n' %s \"$%s\"\n", k, k)
	}
	vars.WriteString(`printf 'NAMES=%s\n' "${NAMES[*]}"`)
	got := strings.Split(strings.TrimSpace(sourceEntrypoint(t, vars.String())), "\n")
	var names []string
	for _, d := range policies["rich"].Domains {
		names = append(names, d.Name)
	}
	var wantLines []string
	for _, k := range keys {
		wantLines = append(wantLines, k+"="+want[k])
	}
	wantLines = append(wantLines, "NAMES="+strings.Join(names, " "))
	if !slices.Equal(got, wantLines) {
		t.Errorf("the entrypoint's constants:\n got %q\nwant %q", got, wantLines)
	}
}

// TestEntrypointHasNoCopies checks that the entrypoint's template holds no
// literal copy of a value that Go renders into it.
func TestEntrypointHasNoCopies(t *testing.T) {
	src, err := templateFS.ReadFile("templates/entrypoint.sh.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{
		RulesPath, DnsmasqPath, EntrypointPath, "agentbox-egress", resolvConf, runDir,
		filterAddr, fmt.Sprint(DNSMinPort), fmt.Sprint(DNSUID), DNSUser, table,
		upstreamV4, upstreamV6, counterPrefix, "nftset=/", portStart.Key, "ip_unprivileged_port_start",
	} {
		if strings.Contains(string(src), c) {
			t.Errorf("templates/entrypoint.sh.tmpl holds a copy of %q", c)
		}
	}
}

// TestAgentAliveSurvivesVanishingProcesses: ending a task scans /proc
// while processes come and go; a process that exits between the listing
// and the read must not end the entrypoint (set -e) with status 1 instead
// of the deadline's 124.
func TestAgentAliveSurvivesVanishingProcesses(t *testing.T) {
	bash := requireTool(t, "bash", false)
	dir := writeFiles(t, mustRender(t, policies["rich"]))
	src := fmt.Sprintf(`source %q
set -euo pipefail
agent_uid=4242424
for ((n = 0; n < 300; n++)); do
	sleep 0.001 & sleep 0.001 &
	if agent_alive; then echo "alive?"; fi
done
echo survived`, filepath.Join(dir, entrypointFile))
	out, err := exec.Command(bash, "-c", src).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "survived") || strings.Contains(string(out), "alive?") {
		t.Fatalf("bash: %v\n%s", err, out)
	}
}

// TestGrantSeconds reads nft's expiry times ("1h2m3s400ms") as seconds.
func TestGrantSeconds(t *testing.T) {
	out := sourceEntrypoint(t, `for d in 1d2h3m4s5ms 29m59s996ms 2s996ms 996ms 1h 10m 59s 1h0m1s; do seconds "$d"; done`)
	want := "93784\n1799\n2\n0\n3600\n600\n59\n3601\n"
	if out != want {
		t.Errorf("seconds: got %q, want %q", out, want)
	}
}

// TestEndTaskStays: at the deadline the entrypoint exits 124, or, with
// DeadlineStayEnv=1 (a Kubernetes sidecar, which the kubelet would
// restart), stays with egress closed.
func TestEndTaskStays(t *testing.T) {
	for _, tc := range []struct {
		stay string
		want string
	}{{"", "exit 124"}, {"1", "still running"}, {"yes", "exit 124"}} {
		out := sourceEntrypoint(t, `close_egress() { echo closed; }
as_agent_kill() { :; }
agent_alive() { return 1; }
log() { :; }
agent_uid=4242
export `+DeadlineStayEnv+`=`+tc.stay+`
( end_task ) & pid=$!
sleep 0.3
if kill -0 "$pid" 2>/dev/null; then echo "still running"; child=$(pgrep -P "$pid"); kill -KILL "$pid"; kill $child; else wait "$pid"; echo "exit $?"; fi`)
		if !strings.Contains(out, "closed") || !strings.Contains(out, tc.want) {
			t.Errorf("%s=%q: %q, want egress closed and %q", DeadlineStayEnv, tc.stay, out, tc.want)
		}
	}
}
