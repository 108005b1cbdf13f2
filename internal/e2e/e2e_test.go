//go:build e2e

// Package e2e runs what agentbox generates in a real Docker Engine with
// compose v2 and the Dev Containers CLI, with no access beyond the machine
// (issue 5). It needs root, Docker, compose v2, the devcontainer CLI and the
// base image: bash scripts/e2e/setup.sh && bash scripts/e2e/base-image.sh.
//
//	go test -tags e2e -count=1 -timeout 20m -v ./internal/e2e/
//
// Without root or Docker it skips, except under CI=true, where it fails.
// AGENTBOX_E2E_NO_CACHE=1 builds the images without the build cache first
// (to measure a first build).
package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/lockfile"
)

func TestEndToEnd(t *testing.T) {
	requirements(t)
	start := time.Now()
	e := newEnv(t)
	e.lock() // released after everything else is removed
	t.Cleanup(func() {
		if left := e.leftovers(); len(left) > 0 {
			t.Errorf("the test left behind:\n  %s", strings.Join(left, "\n  "))
		}
	})
	t.Cleanup(e.removeImages)
	e.removeLeftovers()
	e.buildAgentbox()
	e.startRegistries()
	e.pushBase()
	e.startFakeNet()
	e.timed("setup (build, registries, push, fake internet)", time.Since(start))

	none := e.newProject("none", "none")
	t.Run("Sandbox", func(t *testing.T) { testSandbox(e.sub(t), none.in(e.sub(t))) })
	t.Run("Attack", func(t *testing.T) { testAttack(e.sub(t), none.in(e.sub(t))) })
	t.Run("Restart", func(t *testing.T) { testRestart(e.sub(t), none.in(e.sub(t))) })
	t.Run("DevContainer", func(t *testing.T) { testDevContainer(e.sub(t), none.in(e.sub(t))) })
	t.Run("FaultUnhealthyEgress", func(t *testing.T) { testFault(e.sub(t), none.in(e.sub(t))) })
	t.Run("NPMAgent", func(t *testing.T) { testNPMAgent(e.sub(t)) })
	// The Quickstart is Claude Code in the sandbox (up, shell, fetch);
	// RealClaude is its tasks (run, direct, Kubernetes).
	t.Run("Quickstart", func(t *testing.T) { testQuickstart(e.sub(t)) })
	t.Run("RealClaude", func(t *testing.T) { testRealClaude(e.sub(t)) })
	tasks := e.newProject("tasks", "none")
	t.Run("Run", func(t *testing.T) { testRun(e.sub(t), tasks.in(e.sub(t))) })
	t.Run("Allow", func(t *testing.T) { testAllow(e.sub(t), none.in(e.sub(t))) })
	t.Run("Profiles", func(t *testing.T) {
		testProfiles(e.sub(t), e.newProject("profiles", "none").in(e.sub(t)))
	})
	t.Run("Kubernetes", func(t *testing.T) { testKubernetes(e.sub(t)) })
	t.Run("AllowName", func(t *testing.T) { testAllowName(e.sub(t), none.in(e.sub(t))) })
	t.Run("Policy", func(t *testing.T) { testPolicy(e.sub(t), none.in(e.sub(t))) })
	t.Run("Approve", func(t *testing.T) { testApprove(e.sub(t), none.in(e.sub(t))) })
	// The other real agent CLIs run in parallel: each has its own project,
	// state directory, model fake and npm proxy, and most of their time is
	// the image build (npm ci of the CLI from the npm registry) and bump,
	// which wait on the network. Parallel subtests start when this function
	// has returned, after every subtest above; go test's -parallel (by
	// default GOMAXPROCS) says how many at once.
	t.Run("RealCodex", func(t *testing.T) { t.Parallel(); testRealOpenAI(e.sub(t), codexAgent) })
	t.Run("RealOpenCode", func(t *testing.T) { t.Parallel(); testRealOpenAI(e.sub(t), opencodeAgent) })
	t.Run("RealGemini", func(t *testing.T) { t.Parallel(); testRealGemini(e.sub(t)) })
	t.Run("RealCopilot", func(t *testing.T) { t.Parallel(); testRealCopilot(e.sub(t)) })
	// So does the forge's test: its own project and forge, and mostly its
	// egress image's build.
	t.Run("Forge", func(t *testing.T) { t.Parallel(); testForge(e.sub(t)) })

	// Run first of the cleanups, once the parallel subtests have ended.
	t.Cleanup(func() {
		e.timed("whole end-to-end test (without cleanup)", time.Since(start))
		var b strings.Builder
		e.rec.mu.Lock()
		for _, tm := range e.rec.timings {
			fmt.Fprintf(&b, "\n  %-55s %7.1f s", tm.what, tm.took.Seconds())
		}
		e.rec.mu.Unlock()
		t.Logf("e2e timings:%s", b.String())
	})
}

// bump pins the base image through the local registry, checks the lock and
// the FROM lines, and that generate --check finds the files current.
func bump(e *env, p *project, env []string) {
	t := e.t
	r := p.mustAgentbox(env, "bump")
	e.timed("agentbox bump ("+p.what+")", r.took)
	lock, err := os.ReadFile(filepath.Join(p.dir, "agentbox.lock"))
	if err != nil {
		t.Fatal(err)
	}
	digest := e.baseRef[strings.LastIndexByte(e.baseRef, '@')+1:]
	if !bytes.Contains(lock, []byte(digest)) {
		t.Fatalf("agentbox.lock does not pin the pushed digest %s:\n%s", digest, lock)
	}
	for _, f := range []string{"agent.Dockerfile", "egress.Dockerfile"} {
		b, err := os.ReadFile(filepath.Join(p.dir, ".agentbox", f))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^FROM ` + regexp.QuoteMeta(e.baseRef) + `$`).Match(b) {
			t.Fatalf(".agentbox/%s does not start FROM %s:\n%s", f, e.baseRef, b)
		}
	}
	r = p.mustAgentbox(nil, "generate", "--check")
	if !strings.Contains(r.stdout+r.stderr, "up to date") {
		t.Logf("agentbox generate --check said: %s", r)
	}
}

// coldBuild builds the project's images without the build cache when
// AGENTBOX_E2E_NO_CACHE=1, to measure a first build on this machine
// (agentbox up then finds them built). By default the cache of earlier runs
// is used.
func coldBuild(e *env, p *project, env []string) {
	if os.Getenv("AGENTBOX_E2E_NO_CACHE") != "1" {
		return
	}
	r := p.compose("", nil, env, "build", "--no-cache")
	e.trackImages(p.name)
	if r.failed() {
		e.t.Fatalf("docker compose build --no-cache: %s", r)
	}
	e.timed("build without cache ("+p.what+"): docker compose build --no-cache", r.took)
}

// checkPinned: the image holds what agentbox.lock pins and nothing else.
// The CLI's tree is the lock's (a nested b for a, the newest b in a's
// range, the win32 package out of the lock and of the image), and the
// Debian packages are at the lock's versions.
func checkPinned(e *env, p *project, version string) {
	t := e.t
	data, err := os.ReadFile(filepath.Join(p.dir, lockfile.File))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := lockfile.Parse(lockfile.File, data)
	if err != nil {
		t.Fatal(err)
	}
	tree, ok := lock.Tree(npmPackage)
	win32 := false
	if ok {
		_, win32 = tree.Packages["node_modules/agentbox-e2e-win32"]
	}
	if !ok || tree.Packages["node_modules/agentbox-e2e-a/node_modules/agentbox-e2e-b"].Version != "1.2.0" || win32 {
		t.Fatalf("agentbox.lock does not pin the fake registry's tree:\n%s", data)
	}
	if want := "tree: a 1.1.0, b 2.1.3, a's b 1.2.0"; !strings.Contains(version, want) {
		t.Errorf("the CLI in the sandbox does not run on the pinned tree (want %q): %s", want, version)
	}
	r := p.mustAgentbox(nil, "shell", "--", "sh", "-c",
		"dpkg --print-architecture; dpkg-query -W -f '${Package}=${Version}\\n' ca-certificates git nodejs npm; test ! -e /opt/agentbox/npm/node_modules/agentbox-e2e-win32 && echo no-win32")
	lines := strings.Fields(r.stdout)
	if len(lines) != 6 || lines[5] != "no-win32" {
		t.Fatalf("the sandbox's packages: %s", r)
	}
	rel, _ := lock.Debian.Release(mustRef(t, e.baseTag))
	pins := lock.Debian.Pins[rel][lines[0]].Versions
	for _, l := range lines[1:5] {
		name, v, _ := strings.Cut(l, "=")
		if pins[name] != v {
			t.Errorf("%s is at %s in the sandbox; agentbox.lock pins %q for %s/%s", name, v, pins[name], rel, lines[0])
		}
	}
	t.Logf("installed as pinned at snapshot %s: %s", lock.Debian.Snapshot, strings.Join(lines[1:5], " "))
}

// checkTamperRefused: the registry now serves other bytes for a's b; npm ci
// in the built agent image, from the generated files, must refuse them. It
// runs last: the registry stays changed.
func checkTamperRefused(e *env, p *project) {
	t := e.t
	resp, err := http.Post(e.npmURL+"-/agentbox-e2e/tamper?pkg=agentbox-e2e-b@1.2.0", "text/plain", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("tampering with the fake registry: %v %v", err, resp)
	}
	resp.Body.Close()
	image := strings.TrimSpace(e.run(runOpt{}, "docker", "image", "ls", "-q", p.name+"-agent").stdout)
	if image == "" {
		t.Fatalf("no image %s-agent", p.name)
	}
	r := e.run(runOpt{}, "docker", "run", "--rm", "--network", "bridge", "--user", "0", "--entrypoint", "sh",
		"-e", "NPM_CONFIG_REGISTRY="+e.npmURL, "-v", filepath.Join(p.dir, ".agentbox/npm")+":/src:ro", image, "-c",
		"cp -r /src /tmp/p && cd /tmp/p && npm ci --fetch-retries=0 --no-audit --no-fund")
	e.timed("npm ci in the agent image against a changed tarball", r.took)
	if !r.failed() || !strings.Contains(r.stdout+r.stderr, "EINTEGRITY") {
		t.Errorf("npm ci installed a tarball whose bytes changed after the bump: %s", r)
	}
}

func mustRef(t *testing.T, s string) images.Ref {
	r, err := images.ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// healthyStart checks that the egress is healthy and the agent runs, and
// returns the time from the egress container's start to the agent's.
func healthyStart(e *env, project string) time.Duration {
	t := e.t
	eg, ag := e.container(project, "egress"), e.container(project, "agent")
	if eg == "" || ag == "" {
		t.Fatalf("project %s: egress %q, agent %q: want both containers", project, eg, ag)
	}
	es, as := e.state(eg), e.state(ag)
	if es.Health == nil || es.Health.Status != "healthy" || !as.Running {
		t.Fatalf("project %s: egress %s (health %+v), agent running=%v", project, es.Status, es.Health, as.Running)
	}
	return as.StartedAt.Sub(es.StartedAt)
}

// upWithFakeDNS recreates the sandbox with the override file, whose egress
// service asks the fake upstream DNS. agentbox up takes no override file,
// so this is docker compose itself; the images are those agentbox up built.
func upWithFakeDNS(e *env, p *project, env []string) {
	t := e.t
	r := p.compose("", []string{p.override}, env, "up", "-d", "--wait")
	if r.failed() {
		t.Fatalf("docker compose up with the fake DNS: %s", r)
	}
	d := healthyStart(e, p.name)
	e.timed("start with the fake DNS (no build): compose up until healthy", r.took)
	e.timed("  of which egress start -> agent start (egress healthy)", d)
	eg := e.container(p.name, "egress")
	ip := strings.TrimSpace(e.docker("inspect", "--format", `{{(index .NetworkSettings.Networks "`+e.netName+`").IPAddress}}`, eg).stdout)
	if !strings.HasPrefix(ip, "198.18.0.") {
		t.Fatalf("the egress container is not on %s: address %q", e.netName, ip)
	}
	handKeysAgain(e, eg, env)
}

// handKeysAgain hands a recreated egress the keys of env that its gateway
// holds (model keys and forge tokens), as agentbox up does
// (sandbox.HandKeys: on the entrypoint's standard input), then says they
// are all there: the keys live in HAProxy's memory, and compose up
// recreated it without them. A variable of env that the gateway holds no
// key of is refused before its value is read.
func handKeysAgain(e *env, eg string, env []string) {
	t := e.t
	handed := 0
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" {
			continue
		}
		r := e.run(runOpt{stdin: value + "\n"}, "docker", "exec", "-i", eg, firewall.EntrypointPath, firewall.SetKeyArg, name)
		switch {
		case r.code == 2 && strings.Contains(r.stderr, "holds no key"):
			// Not one of this gateway's keys (a task's, or no gateway).
		case r.failed():
			t.Fatalf("handing %s to the recreated egress: %s", name, r)
		default:
			handed++
		}
	}
	if handed > 0 {
		if r := e.run(runOpt{}, "docker", "exec", eg, firewall.EntrypointPath, firewall.KeysDoneArg); r.failed() {
			t.Fatalf("keys-done in the recreated egress: %s", r)
		}
	}
}

type verifyReport struct {
	Passed bool `json:"passed"`
	Probes []struct {
		Result, Area, Probe, Tried, Happened string
	} `json:"probes"`
}

// verify runs agentbox verify and checks that every probe passed and that
// the probes named in want ran; it returns the report.
func verify(e *env, p *project, want ...string) verifyReport {
	t := e.t
	r := p.agentbox(nil, "verify", "--json")
	e.timed("agentbox verify ("+p.what+")", r.took)
	var rep verifyReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("agentbox verify --json: %v: %s", err, r)
	}
	var table strings.Builder
	got := map[string]string{}
	failed := 0
	for _, pr := range rep.Probes {
		fmt.Fprintf(&table, "\n  %-4s %-11s %-22s %-45s %s", pr.Result, pr.Area, pr.Probe, pr.Tried, pr.Happened)
		key := pr.Area + "/" + pr.Probe
		got[key] = pr.Result
		if pr.Result == "FAIL" {
			failed++
			t.Errorf("verify: FAIL %s %s: tried %s: %s", pr.Area, pr.Probe, pr.Tried, pr.Happened)
		}
		// The pids probe must say how many processes started before fork
		// failed; the limit itself is also checked with docker inspect.
		if key == "privileges/pids limit" && !regexp.MustCompile(`stopped at [0-9]+;`).MatchString(pr.Happened) {
			t.Errorf("verify: %s reported no count: %q", key, pr.Happened)
		}
	}
	t.Logf("agentbox verify:%s", table.String())
	if failed > 0 || (r.code != 0) != !rep.Passed {
		t.Errorf("agentbox verify: exit %d, passed=%v: %s", r.code, rep.Passed, tail(r.stderr, 20))
	}
	for _, w := range want {
		switch got[w] {
		case "":
			t.Errorf("verify: probe %s did not run", w)
		case "SKIP":
			t.Errorf("verify: probe %s was skipped", w)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return rep
}

// checkLimits checks the agent container's limits as Docker applied them.
func checkLimits(e *env, project string) {
	ag := e.container(project, "agent")
	r := e.docker("inspect", "--format", "{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.PidsLimit}} {{.HostConfig.CapDrop}} {{.HostConfig.SecurityOpt}} {{.Config.User}}", ag)
	want := fmt.Sprintf("%d %d 256 [ALL] [no-new-privileges:true] 1000:1000", 256<<20, 256<<20)
	if got := strings.TrimSpace(r.stdout); got != want {
		e.t.Errorf("agent container limits: %q, want %q", got, want)
	}
}

// The probes every project must pass (area/probe of agentbox verify).
var coreProbes = []string{
	"files/host paths", "files/workspace is a clone", "files/read-only git database", "files/host git config",
	"files/hidden files", "files/protected paths", "files/docker socket",
	"network/unlisted name", "network/unlisted address", "network/other resolver", "network/IPv6", "network/metadata",
	"network/allowed name", "network/other name at an allowed address", "network/low ports",
	"privileges/capabilities", "privileges/no_new_privs", "privileges/sudo", "privileges/network settings", "privileges/pids limit",
	"resources/memory limit",
	"persistence/outside the workspace", "persistence/workspace",
}

// downloadScript fetches the web host's payload through the allowed name
// with bash alone (the image has no curl) into the workspace.
const downloadScript = `set -euo pipefail
exec 3<>/dev/tcp/` + allowedName + `/80
printf 'GET /payload.bin HTTP/1.0\r\nHost: ` + allowedName + `\r\n\r\n' >&3
IFS= read -r status <&3
echo "status: ${status%$'\r'}"
while IFS= read -r line <&3; do line=${line%$'\r'}; [[ -z $line ]] && break; done
cat <&3 >/workspace/download.bin
sha256sum /workspace/download.bin`

// otherHostScript asks the allowed name's address for another name (an
// HTTP Host the policy does not list): the gateway closes the connection
// with no answer.
const otherHostScript = `set -uo pipefail
exec 3<>/dev/tcp/` + allowedName + `/80 || { echo "connect failed"; exit 0; }
printf 'GET /payload.bin HTTP/1.0\r\nHost: ` + unlistedName + `\r\n\r\n' >&3
if IFS= read -r -t 10 status <&3; then echo "status: ${status%$'\r'}"; else echo "no answer"; fi`

// checkGateway: on the allowed name's address, a request for another name
// gets nothing (the gateway checks the Host), and agentbox connections
// records both the download above and that refusal.
func checkGateway(e *env, p *project) {
	t := e.t
	r := p.mustAgentbox(nil, "shell", "--", "bash", "-c", otherHostScript)
	if strings.Contains(r.stdout, "status:") {
		t.Errorf("Host %s at the address of %s got an answer through the gateway: %s", unlistedName, allowedName, r)
	}
	r = p.mustAgentbox(nil, "connections", "--json")
	var log struct {
		Connections []struct {
			Name, Verdict, Reason string
			Port                  int
			BytesDown             int64 `json:"bytes_down"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &log); err != nil {
		t.Fatalf("agentbox connections --json: %v\n%s", err, r)
	}
	var download, refused bool
	for _, c := range log.Connections {
		download = download || (c.Name == allowedName && c.Port == 80 && c.Verdict == "allowed" && c.BytesDown >= int64(len(e.payload)))
		refused = refused || (c.Name == unlistedName && c.Port == 80 && c.Verdict == "refused" && c.Reason == "name")
	}
	if !download || !refused {
		t.Errorf("agentbox connections lacks the download from %s (%v) or the refusal of %s (%v):\n%s", allowedName, download, unlistedName, refused, r.stdout)
	}
	// What the sandbox refused holds the gateway's refusal too.
	r = p.mustAgentbox(nil, "blocked", "--json")
	var blocked struct {
		Gateway []struct {
			Name, Reason string
			Port, Count  int
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &blocked); err != nil {
		t.Fatalf("agentbox blocked --json: %v\n%s", err, r)
	}
	found := false
	for _, g := range blocked.Gateway {
		found = found || (g.Name == unlistedName && g.Port == 80 && g.Reason == "name" && g.Count >= 1)
	}
	if !found {
		t.Errorf("agentbox blocked lacks the gateway's refusal of %s on port 80:\n%s", unlistedName, r.stdout)
	}
}

// testSandbox: bump, generate --check, up, verify, a real download, down.
func testSandbox(e *env, p *project) {
	t := e.t
	bump(e, p, nil)
	coldBuild(e, p, nil)

	r := p.mustAgentbox(nil, "up")
	e.trackImages(p.name)
	e.timed("agentbox up (none): build (cached) + start until healthy", r.took)
	e.timed("  of which egress start -> agent start (egress healthy)", healthyStart(e, p.name))

	upWithFakeDNS(e, p, nil)
	checkLimits(e, p.name)
	verify(e, p, coreProbes...)
	// The agent commits with no git configuration of its own, in a
	// container verify has just recreated.
	r = p.mustAgentbox(nil, "shell", "--", "bash", "-c",
		`cd /tmp && git init -q identity && git -C identity commit -q --allow-empty -m x && git -C identity log -1 --format="%an <%ae>|%cn <%ce>"`)
	if want := agentIdentity + "|" + agentIdentity; strings.TrimSpace(r.stdout) != want {
		t.Errorf("a commit in agentbox shell: author|committer %q, want %q", strings.TrimSpace(r.stdout), want)
	}

	// A real download through the allowed name.
	r = p.mustAgentbox(nil, "shell", "--", "bash", "-c", downloadScript)
	e.timed("download 1 MiB from the allowed name (agentbox shell)", r.took)
	if !strings.Contains(r.stdout, "status: HTTP/1.0 200 OK") {
		t.Fatalf("download: no 200 answer: %s", r)
	}
	sum := sha256.Sum256(e.payload)
	if !strings.Contains(r.stdout, hex.EncodeToString(sum[:])) {
		t.Fatalf("download: the sha256 in the sandbox is not the payload's (%x): %s", sum, r)
	}
	got := []byte(p.mustAgentbox(nil, "shell", "--", "cat", "/workspace/download.bin").stdout)
	if !bytes.Equal(got, e.payload) {
		t.Fatalf("download: the workspace file differs from the payload (%d of %d bytes)", len(got), len(e.payload))
	}
	// The workspace is the agent's clone: nothing it writes lands in the
	// project directory.
	if _, err := os.Stat(filepath.Join(p.dir, "download.bin")); !os.IsNotExist(err) {
		t.Fatalf("download: the file written in the sandbox's workspace is in the project directory (%v)", err)
	}
	checkDNSOverTCP(e, p)
	checkGateway(e, p)

	// What the fake internet saw: the allowed name was asked upstream and
	// fetched; the unlisted name never left the sandbox, and the decoy host
	// (the unlisted address, and where the unlisted name would point) got
	// nothing from the sandbox.
	eg := e.container(p.name, "egress")
	egIP := strings.TrimSpace(e.docker("inspect", "--format", `{{(index .NetworkSettings.Networks "`+e.netName+`").IPAddress}}`, eg).stdout)
	dnsLog, webLog, decoyLog := e.logsOf(e.dnsName), e.logsOf(e.webName), e.logsOf(e.decoyName)
	if !regexp.MustCompile(`dns (udp|tcp) ` + regexp.QuoteMeta(egIP) + `:\d+ ` + regexp.QuoteMeta(allowedName) + ` A -> ` + regexp.QuoteMeta(webIP)).MatchString(dnsLog) {
		t.Errorf("the fake DNS was not asked for %s by the egress container (%s):\n%s", allowedName, egIP, dnsLog)
	}
	if egIP == probeIP {
		t.Fatalf("the egress container has the address of the test's own probe, %s", probeIP)
	}
	if regexp.MustCompile(`dns (udp|tcp) ` + regexp.QuoteMeta(egIP) + `:\d+ ` + regexp.QuoteMeta(unlistedName) + ` `).MatchString(dnsLog) {
		t.Errorf("the fake DNS was asked for the unlisted name %s by the egress container (%s):\n%s", unlistedName, egIP, dnsLog)
	}
	if !regexp.MustCompile(`http web ` + regexp.QuoteMeta(egIP) + `:\d+ GET /payload.bin 200`).MatchString(webLog) {
		t.Errorf("the web host did not serve the payload to the egress address %s:\n%s", egIP, webLog)
	}
	if strings.Contains(decoyLog, " "+egIP+":") {
		t.Errorf("the decoy host was reached from the sandbox (%s):\n%s", egIP, decoyLog)
	}
	r = p.mustAgentbox(nil, "logs", "egress")
	if !strings.Contains(r.stdout+r.stderr, "query[A] "+unlistedName) || !strings.Contains(r.stdout+r.stderr, "query[A] "+allowedName) {
		t.Errorf("the egress log does not show both queries (audit log):\n%s", tail(r.stdout+r.stderr, 40))
	}

	r = p.mustAgentbox(nil, "down")
	e.timed("agentbox down", r.took)
	if id := e.container(p.name, "egress") + e.container(p.name, "agent"); id != "" {
		t.Fatalf("containers remain after agentbox down: %s", id)
	}
}

// devHostAddr stands for a host address in the devcontainer CLI's
// environment.
const devHostAddr = "198.18.9.77"

// devContainerHost: the egress of a Dev Container refuses the host on the
// sandbox network's gateway, which it reads from its routes, and on the
// addresses of AGENTBOX_HOST_ADDRS in the devcontainer CLI's environment
// (issue 19 part 9). It reads the firewall's set; it sends nothing.
func devContainerHost(e *env, p *project) {
	t := e.t
	eg := e.container(p.name, "egress")
	set := e.run(runOpt{}, "docker", "exec", eg, "nft", "list", "set", "inet", "agentbox", "host_v4")
	if set.failed() {
		t.Fatalf("listing the egress's host_v4 set: %s", set)
	}
	want := []string{devHostAddr}
	if gw := defaultGateway(e.run(runOpt{}, "docker", "exec", eg, "cat", "/proc/net/route").stdout); gw != "" {
		want = append(want, gw)
	} else {
		t.Errorf("the egress has no IPv4 default route")
	}
	for _, a := range want {
		if !regexp.MustCompile(`[{ ,]` + regexp.QuoteMeta(a) + `[ ,}]`).MatchString(set.stdout) {
			t.Errorf("the Dev Container's egress does not refuse the host's address %s:\n%s", a, set.stdout)
		}
	}
}

// defaultGateway is the gateway of the default route in route, the text of
// /proc/net/route (addresses in hex, least significant byte first).
func defaultGateway(route string) string {
	for _, l := range strings.Split(route, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[1] != "00000000" || len(f[2]) != 8 || f[2] == "00000000" {
			continue
		}
		b, err := hex.DecodeString(f[2])
		if err != nil {
			continue
		}
		return fmt.Sprintf("%d.%d.%d.%d", b[3], b[2], b[1], b[0])
	}
	return ""
}

// testDevContainer: the same project through devcontainer up and exec. Its
// egress uses Docker's resolver as generated (no override: the Dev
// Containers CLI reads only devcontainer.json), so only names the filter
// answers itself are asked: nothing leaves the machine.
func testDevContainer(e *env, p *project) {
	t := e.t
	dc, err := os.ReadFile(filepath.Join(p.dir, ".devcontainer", "devcontainer.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"postStartCommand", "postCreateCommand", "postAttachCommand", "onCreateCommand", "updateContentCommand", "initializeCommand"} {
		if bytes.Contains(dc, []byte(cmd)) {
			t.Fatalf("devcontainer.json has a %s; the test is about a firewall that needs none:\n%s", cmd, dc)
		}
	}
	// The CLI's scratch directory (TMPDIR) is the test's; a fresh control
	// manifest keeps it from fetching one.
	tmp := filepath.Join(e.work, "devcontainer-tmp")
	manifest := filepath.Join(tmp, "devcontainercli-root", "control-manifest.json")
	writeManifest := func() {
		if err := os.MkdirAll(filepath.Dir(manifest), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(manifest, []byte(`{"disallowedFeatures":[],"featureAdvisories":[]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The host's addresses reach the egress from the environment of the
	// process that runs compose, here the devcontainer CLI's (the address
	// is only put in the firewall's set: nothing is sent to it).
	env := []string{"TMPDIR=" + tmp, "AGENTBOX_HOST_ADDRS=" + devHostAddr}
	// From a stopped sandbox, also when the previous part failed half-way.
	if id := e.container(p.name, "egress") + e.container(p.name, "agent"); id != "" {
		t.Logf("the sandbox still runs (an earlier part failed); taking it down first")
		e.must(runOpt{dir: e.work}, "docker", "compose", "-p", p.name, "down")
	}

	// The Dev Container reads no agentbox settings: agentbox build, as the
	// README says, builds with them first, and the Dev Containers CLI's own
	// build (from an editor that has none of the settings' variables) finds
	// every step in the build cache: the settings are no build arguments.
	if r := p.agentbox(nil, "build"); r.failed() {
		t.Fatalf("agentbox build: %s", r)
	}
	writeManifest()
	r := e.run(runOpt{dir: e.work, env: env, bare: true}, "devcontainer", "up", "--workspace-folder", p.dir)
	var up struct {
		Outcome, ContainerID, ComposeProjectName, RemoteUser, RemoteWorkspaceFolder string
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &up)
	if up.ComposeProjectName != "" && up.ComposeProjectName != p.name {
		name := up.ComposeProjectName
		t.Cleanup(func() {
			e.cleanup().trackImages(name)
			quiet(t, "docker", "compose", "-p", name, "down", "--volumes", "--timeout", "3")
		})
		t.Errorf("devcontainer up: compose project %q, want the name in docker-compose.yml, %q", name, p.name)
	}
	e.trackImages(p.name)
	if r.failed() || up.Outcome != "success" {
		t.Fatalf("devcontainer up: outcome %q: %s", up.Outcome, r)
	}
	e.timed("devcontainer up (images cached)", r.took)
	if strings.Contains(r.stderr, "Failed to fetch control manifest") {
		t.Errorf("the devcontainer CLI tried to fetch its control manifest:\n%s", tail(r.stderr, 20))
	}
	if up.RemoteUser != "agent" || up.RemoteWorkspaceFolder != "/workspace" {
		t.Errorf("devcontainer up: remote user %q, folder %q; want agent, /workspace", up.RemoteUser, up.RemoteWorkspaceFolder)
	}
	healthyStart(e, p.name)
	devContainerHost(e, p)

	script := `set -u
echo "user: $(id -un) $(id -u)"
echo "caps: $(awk '/^CapEff:/ {print $2}' /proc/self/status)"
if getent ahosts ` + unlistedName + ` >/dev/null 2>&1; then echo "unlisted name: resolved"; else echo "unlisted name: no address"; fi
t0=${EPOCHREALTIME/./}
if timeout 3 bash -c 'exec 3<>/dev/tcp/` + decoyIP + `/80' 2>/dev/null; then r=connected; else r=refused; fi
echo "unlisted address: $r in $(( (${EPOCHREALTIME/./} - t0) / 1000 )) ms"
if touch /run/agentbox/origin/hooks/x 2>/dev/null; then echo "git database: written"; else echo "git database: read-only"; fi
if [ -d /workspace/.git ] && [ -f /workspace/README ]; then echo "workspace: a clone"; else echo "workspace: no clone"; fi`
	writeManifest()
	r = e.run(runOpt{dir: e.work, env: env, bare: true}, "devcontainer", "exec", "--workspace-folder", p.dir, "bash", "-c", script)
	if r.failed() {
		t.Fatalf("devcontainer exec: %s", r)
	}
	t.Logf("devcontainer exec:\n%s", r.stdout)
	for _, want := range []string{"user: agent 1000", "caps: 0000000000000000", "unlisted name: no address", "unlisted address: refused", "git database: read-only", "workspace: a clone"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("devcontainer exec: want %q in:\n%s", want, r.stdout)
		}
	}
	if m := regexp.MustCompile(`refused in (\d+) ms`).FindStringSubmatch(r.stdout); m != nil && len(m[1]) > 3 {
		t.Errorf("devcontainer exec: the unlisted address took %s ms to be refused; want under a second", m[1])
	}
	egLog := e.logsOf(e.container(p.name, "egress"))
	if !strings.Contains(egLog, "query[A] "+unlistedName) || !strings.Contains(egLog, unlistedName+" is NXDOMAIN") {
		t.Errorf("the egress log does not show the filter answering NXDOMAIN for %s:\n%s", unlistedName, tail(egLog, 30))
	}

	// The CLI has no down; the compose project it started is the sandbox's.
	r = e.run(runOpt{dir: e.work}, "docker", "compose", "-p", p.name, "down")
	if r.failed() {
		t.Fatalf("docker compose -p %s down: %s", p.name, r)
	}
	if id := e.container(p.name, "egress") + e.container(p.name, "agent"); id != "" {
		t.Fatalf("containers remain after docker compose down: %s", id)
	}
}

// testFault: an egress container that never becomes healthy must not let
// the agent start: one whose ruleset cannot load (no NET_ADMIN: it fails
// closed and exits), and one that runs but fails its healthcheck. Also the
// clear error when the daemon does not answer.
func testFault(e *env, p *project) {
	t := e.t
	for _, f := range []struct {
		suffix, egress string
		running        bool   // the egress container keeps running, unhealthy
		log            string // in the egress log
	}{{
		suffix:  "fault",
		egress:  "    cap_add: !override [KILL, NET_BIND_SERVICE, SETGID, SETUID]\n",
		running: false,
		log:     "loading /etc/agentbox/rules.nft failed",
	}, {
		suffix:  "unhealthy",
		egress:  "    healthcheck:\n      test: !override [\"CMD\", \"false\"]\n      start_period: 1s\n",
		running: true,
		log:     "agentbox-egress: ready",
	}} {
		testFaultCase(e, p, f.suffix, f.egress, f.running, f.log)
	}

	// The daemon does not answer: a clear one-line error, exit 1.
	r := p.agentbox([]string{"DOCKER_HOST=unix://" + filepath.Join(e.work, "no-docker.sock")}, "up")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot reach the Docker daemon") {
		t.Errorf("agentbox up with no daemon: want exit 1 and \"cannot reach the Docker daemon\": %s", r)
	}
}

// testFaultCase starts the sandbox with the egress service changed by
// egress (compose override lines) as project NAME-suffix, and checks that
// compose gives up and the agent never ran.
func testFaultCase(e *env, p *project, suffix, egress string, running bool, wantLog string) {
	t := e.t
	name := p.name + "-" + suffix
	// The workspace is a volume: the marker goes to a directory of the
	// test's own, mounted for this purpose.
	markerDir := filepath.Join(e.work, "markers-"+suffix)
	if err := os.MkdirAll(markerDir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(markerDir, 0o777)
	marker := filepath.Join(markerDir, "agent-ran")
	fault := filepath.Join(e.work, suffix+".override.yml")
	override := "# agentbox e2e fault: the egress container never becomes healthy; the agent\n" +
		"# leaves a marker when it runs.\nservices:\n  egress:\n" + egress +
		"  agent:\n    command: [\"bash\", \"-c\", \"touch /markers/agent-ran; exec sleep infinity\"]\n" +
		"    volumes:\n      - " + markerDir + ":/markers\n"
	if err := os.WriteFile(fault, []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	r := p.compose(name, []string{fault}, nil, "up", "-d", "--wait", "--wait-timeout", "120")
	e.trackImages(name)
	e.timed("fault, egress never healthy ("+suffix+"): compose up fails", r.took)
	if !r.failed() {
		t.Fatalf("docker compose up succeeded with an egress container that is never healthy: %s", r)
	}
	t.Logf("compose up failed as it must: %s", tail(r.stderr, 3))
	eg, ag := e.container(name, "egress"), e.container(name, "agent")
	if eg == "" {
		t.Fatalf("no egress container: %s", r)
	}
	es := e.state(eg)
	health := "none"
	if es.Health != nil {
		health = es.Health.Status
	}
	egLog := e.logsOf(eg)
	t.Logf("egress container: %s (running %v, exit %d, health %s); its log:\n%s", es.Status, es.Running, es.ExitCode, health, tail(egLog, 8))
	if health == "healthy" || es.Running != running {
		t.Errorf("egress container: running %v, health %s; want running %v, not healthy", es.Running, health, running)
	}
	if !strings.Contains(egLog, wantLog) {
		t.Errorf("the egress log does not say %q", wantLog)
	}
	// The agent container may exist (compose creates it), but never ran.
	if ag != "" {
		as := e.state(ag)
		if as.Running || !as.StartedAt.IsZero() || as.Status != "created" {
			t.Errorf("the agent container ran: %+v", as)
		}
	}
	time.Sleep(time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the agent ran: %s exists", marker)
	}
	if r := p.compose(name, nil, nil, "down", "--volumes", "--timeout", "3"); r.failed() {
		t.Errorf("docker compose down: %s", r)
	}
}

// testNPMAgent: a project with an npm agent (claude) whose package comes
// from the fake npm registry, through the agent Dockerfile's real install
// path; then the probes, with the state volume.
func testNPMAgent(e *env) {
	t := e.t
	p := e.newProject("claude", "claude")
	// Debian through the plain-mirror stand-in: bump resolves from it and
	// the builds install from it.
	stand := standIns{npm: e.npmURL, plain: true}
	npm := e.settings(stand)
	bump(e, p, npm)
	lock, _ := os.ReadFile(filepath.Join(p.dir, "agentbox.lock"))
	if !regexp.MustCompile(`"` + regexp.QuoteMeta(npmPackage) + `":\s*version: "` + regexp.QuoteMeta(npmVersion) + `"`).Match(lock) {
		t.Fatalf("agentbox.lock does not pin %s@%s from the fake npm:\n%s", npmPackage, npmVersion, lock)
	}

	checkUnreachableArchive(e, p)

	// agentbox up passes the settings' registry (NPM_CONFIG_REGISTRY) and
	// archive to the images' builds.
	// The registry's address, and so the build arg, differs in every run:
	// the layers from the apt-get of nodejs and npm on are built again, and
	// the package is installed from the fake registry each time.
	coldBuild(e, p, npm)
	r := p.mustAgentbox(npm, "up")
	e.trackImages(p.name)
	e.timed("agentbox up (claude): build (npm layers anew) + start until healthy", r.took)
	r = p.mustAgentbox(nil, "shell", "--", "claude", "--version")
	if !strings.Contains(r.stdout, npmVersion+" (agentbox e2e stand-in)") {
		t.Fatalf("claude --version in the sandbox: %s", r)
	}
	checkPinned(e, p, r.stdout)
	tarball := regexp.MustCompile(`npm: (\d+\.\d+\.\d+\.\d+):\d+ GET /` + regexp.QuoteMeta(npmPackage) + `/-/\S+\.tgz -> 200`)
	m := tarball.FindStringSubmatch(e.regLog.String())
	if m == nil {
		t.Errorf("the fake npm served no tarball:\n%s", tail(e.regLog.String(), 30))
	} else {
		t.Logf("the package tarball was fetched by %s (a build container)", m[1])
	}

	upWithFakeDNS(e, p, npm)
	checkLimits(e, p.name)
	verify(e, p, append(coreProbes, "persistence/state volume")...)

	// The state volume outlives agentbox down; a start from nothing (the
	// images built) is the sandbox's cold start.
	const state = "/home/agent/.claude/e2e-state"
	p.mustAgentbox(nil, "shell", "--", "bash", "-c", "echo "+e.runID+" >"+state)
	r = p.mustAgentbox(nil, "down")
	if id := e.container(p.name, "egress") + e.container(p.name, "agent"); id != "" {
		t.Fatalf("containers remain after agentbox down: %s", id)
	}
	vols := e.docker("volume", "ls", "-q", "--filter", "label=com.docker.compose.project="+p.name).stdout
	if !strings.Contains(vols, p.name+"_agent-state") {
		t.Errorf("the agent's state volume is gone after agentbox down; volumes: %q", vols)
	}
	r = p.mustAgentbox(npm, "up")
	e.timed("sandbox cold start, images built: agentbox up until healthy", r.took)
	e.timed("  of which egress start -> agent start (egress healthy)", healthyStart(e, p.name))
	if r = p.mustAgentbox(nil, "shell", "--", "cat", state); strings.TrimSpace(r.stdout) != e.runID {
		t.Errorf("the state volume lost its file across down and up: %s", r)
	}
	p.mustAgentbox(nil, "down")
	checkTaskState(e, p)
	checkLogin(e, p, stand)
	checkTamperRefused(e, p)
	checkNPMTokenAndCA(e, p)
}

// checkUnreachableArchive: a build whose Debian archive does not answer
// stops at apt-get update, naming the archive, never later at "Unable to
// locate package".
func checkUnreachableArchive(e *env, p *project) {
	t := e.t
	ln, err := net.Listen("tcp", net.JoinHostPort(e.bridgeGW, "0"))
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() // nothing listens there once closed
	ln.Close()
	r := p.agentbox(e.settings(standIns{npm: e.npmURL, debian: down}), "build")
	e.timed("agentbox build against an unreachable Debian archive (fails)", r.took)
	out := r.stdout + r.stderr
	if !r.failed() || !strings.Contains(out, "Failed to fetch "+down+"/debian/") ||
		!strings.Contains(out, "agentbox: apt-get update could not read the Debian archive") || strings.Contains(out, "Unable to locate package") {
		t.Errorf("a build against an unreachable archive: want apt-get update to fail naming %s: %s", down, r)
	}
}

// checkTaskState: two tasks of an agent with a state volume (claude's
// ~/.claude) each get their own: neither sees nor changes the other's, and
// neither sees the sandbox's.
func checkTaskState(e *env, p *project) {
	t := e.t
	env := []string{"XDG_STATE_HOME=" + filepath.Join(e.work, "state")}
	defer p.agentbox(env, "gc")
	const dir = "/home/agent/.claude"
	for _, n := range []string{"state-a", "state-b"} {
		script := "echo " + n + " > " + dir + "/mine-" + n + "; exec sleep 300"
		if r := p.agentbox(env, "run", "--name", n, "--detach", "--timeout", "2m", "--", "bash", "-c", script); r.failed() {
			t.Fatalf("agentbox run --detach %s: %s", n, r)
		}
	}
	// Each task has written its own file before the other's is looked for
	// (a fixed pause raced a loaded machine).
	for _, n := range []string{"state-a", "state-b"} {
		ag := e.container(p.name+"-task-"+n, "agent")
		if !waitFor(30*time.Second, func() bool {
			return e.run(runOpt{}, "docker", "exec", ag, "test", "-s", dir+"/mine-"+n).code == 0
		}) {
			t.Fatalf("task %s did not write %s/mine-%s within 30 s", n, dir, n)
		}
	}
	for _, n := range []string{"state-a", "state-b"} {
		ag := e.container(p.name+"-task-"+n, "agent")
		out := e.run(runOpt{}, "docker", "exec", ag, "bash", "-c", "ls "+dir+"; echo x > "+dir+"/probe-"+n).stdout
		other := map[string]string{"state-a": "state-b", "state-b": "state-a"}[n]
		if !strings.Contains(out, "mine-"+n) || strings.Contains(out, other) || strings.Contains(out, "e2e-state") {
			t.Errorf("task %s's state directory holds %q: want its own file only", n, out)
		}
	}
	for _, n := range []string{"state-a", "state-b"} {
		if r := p.agentbox(env, "stop", n); r.code != 0 {
			t.Errorf("agentbox stop %s: %s", n, r)
		}
	}
}
