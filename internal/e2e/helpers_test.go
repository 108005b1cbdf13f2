//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// The fake internet: a Docker network of the test's own, with a fake
// upstream DNS server and two web hosts. Docker's embedded resolver in the
// egress container forwards to the DNS server (a compose override sets the
// egress service's dns), which answers allowedName with webIP and every
// other name with decoyIP, so that an unlisted name that does not resolve in
// the sandbox was stopped by the sandbox's own filter.
const (
	fakeSubnet  = "198.18.0.0/24"
	fakeGateway = "198.18.0.1"
	dnsIP       = "198.18.0.53"
	webIP       = "198.18.0.80"
	decoyIP     = "198.18.0.99"
	probeIP     = "198.18.0.10" // the check of the fake internet without a sandbox
	allowedName = "allowed.e2e.test"
	// unlistedName is not in any policy; the fake DNS would answer it.
	unlistedName = "unlisted.e2e.test"
	// bigName, under the allowed name, has bigCount addresses: an answer
	// too large for UDP, which the fake DNS truncates there.
	bigName  = "big." + allowedName
	bigCount = 100
	// neverName is every project's elevation.never name; the fake DNS
	// gives it neverIP, where no host is (the decoy's address would put
	// the decoy, which the grants of AllowName reach, in the never set).
	neverName = "never.e2e.test"
	neverIP   = "198.18.0.77"

	baseImage   = "agentbox-e2e/debian:bookworm" // scripts/e2e/base-image.sh
	runLabel    = "agentbox-e2e.run"             // on every container, network and image the test makes itself
	projectPre  = "abe2e-"                       // compose project names: abe2e-RUNID-WHAT
	npmPackage  = "@anthropic-ai/claude-code"
	npmVersion  = "1.2.3"
	payloadSize = 1 << 20
)

// env is what every part of the test shares.
type env struct {
	t        *testing.T
	ctx      context.Context
	root     string // the repository
	work     string // scratch directory, removed at the end
	agentbox string // bin/agentbox
	runID    string

	registry string // 127.0.0.1:PORT
	baseTag  string // REGISTRY/agentbox-e2e/debian:bookworm
	baseRef  string // baseTag@sha256:...
	bridgeGW string // the docker0 gateway, where build containers reach the host
	npmURL   string // http://GATEWAY:PORT/
	// debianURL is the stand-in of Debian's snapshot archive (a proxy of the
	// machine's own apt mirror), on the gateway: bump and every build use it.
	debianURL string
	// config is the default XDG_CONFIG_HOME of agentbox's commands: its
	// agentbox/settings.yaml names the Debian stand-in (writeSettings).
	config string
	regLog *syncBuffer

	netName   string // the fake internet's Docker network
	fakeImage string
	dnsName   string // container names
	webName   string
	decoyName string
	payload   []byte // what the web host serves at /payload.bin

	rec *recorder // shared by the copies of env that subtests use

	// cleaning: a cleanup function's copy (cleanup); its commands get a
	// deadline of their own, since the test's context may have ended.
	cleaning bool
}

// cleanup returns the env for cleanup functions.
func (e *env) cleanup() *env {
	c := *e
	c.cleaning = true
	return &c
}

// recorder collects what every part of the test adds.
type recorder struct {
	mu      sync.Mutex
	timings []timing
	images  map[string]bool // image IDs built by compose for the test's projects
	// tags are tags of images the test did not build (the node image's in
	// the local registry), untagged at the end.
	tags []string

	// node is held while the node image is pushed: the subtests of the
	// real CLIs, in parallel, push it once (nodeImage).
	node      sync.Mutex
	nodeImage string
}

// sub returns the env for subtest t.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

type timing struct {
	what string
	took time.Duration
}

func (e *env) timed(what string, took time.Duration) {
	e.rec.mu.Lock()
	e.rec.timings = append(e.rec.timings, timing{what, took})
	e.rec.mu.Unlock()
	e.t.Logf("e2e timing: %-55s %7.1f s", what, took.Seconds())
}

// requirements skips (or under CI=true fails) when the machine cannot run
// the test.
func requirements(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, p := range []string{"docker", "go", "git", "bash", "devcontainer"} {
		testenv.RequireProgram(t, p)
	}
	const setup = "run: bash scripts/e2e/setup.sh && bash scripts/e2e/base-image.sh"
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		testenv.Unavailable(t, fmt.Sprintf("the Docker daemon does not answer (%s); %s", firstLine(out, err), setup))
	}
	if out, err := exec.Command("docker", "compose", "version", "--short").CombinedOutput(); err != nil {
		testenv.Unavailable(t, fmt.Sprintf("docker compose v2 is not installed (%s); %s", firstLine(out, err), setup))
	}
	if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", baseImage).CombinedOutput(); err != nil {
		testenv.Unavailable(t, fmt.Sprintf("the base image %s is missing (%s); %s", baseImage, firstLine(out, err), setup))
	}
}

func firstLine(out []byte, err error) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" && err != nil {
		return err.Error()
	}
	return line
}

// --- commands -------------------------------------------------------------------

type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
	err            error // set when the command could not run or was killed
}

func (r result) failed() bool { return r.err != nil || r.code != 0 }

func (r result) String() string {
	s := fmt.Sprintf("exit %d after %.1f s", r.code, r.took.Seconds())
	if r.err != nil {
		s += " (" + r.err.Error() + ")"
	}
	return s + "\n--- stdout:\n" + tail(r.stdout, 150) + "\n--- stderr:\n" + tail(r.stderr, 150)
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		return fmt.Sprintf("[%d lines left out]\n", len(lines)-n) + strings.Join(lines[len(lines)-n:], "\n")
	}
	return strings.Join(lines, "\n")
}

type runOpt struct {
	dir   string
	env   []string // added to the environment
	stdin string
	// bare: devcontainer and docker compose get no build variables of the
	// agentbox settings, as from an editor started outside a shell.
	bare bool
}

// run runs a command in its own process group, which is killed when the
// test's context ends.
func (e *env) run(o runOpt, name string, args ...string) result {
	e.t.Helper()
	ctx := e.ctx
	if e.cleaning {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = o.dir
	cmd.Env = os.Environ()
	// agentbox's state (up's records, tasks) under the test's directory,
	// and its settings (the stand-ins), unless o.env names others (the last
	// value of a name wins). Only agentbox gets the settings directory: go
	// and git read theirs from XDG_CONFIG_HOME too.
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+filepath.Join(e.work, "state-default"))
	if name == e.agentbox && e.config != "" {
		cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+e.config)
	}
	cmd.Env = append(cmd.Env, o.env...)
	if !o.bare && (name == "devcontainer" || name == "docker" && len(args) > 0 && args[0] == "compose") {
		cmd.Env = e.settingsEnviron(cmd.Env, o.env)
	}
	cmd.Stdin = strings.NewReader(o.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.code = ee.ExitCode()
	case err != nil:
		r.code, r.err = -1, err
	}
	e.t.Logf("$ %s  [exit %d, %.1f s]", display(name, args), r.code, r.took.Seconds())
	return r
}

// display shows a command line, multi-line arguments (scripts) cut short.
func display(name string, args []string) string {
	words := []string{filepath.Base(name)}
	for _, a := range args {
		if first, _, cut := strings.Cut(a, "\n"); cut {
			a = "'" + first + " ...'"
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

// must runs a command and fails the test unless it exits 0.
func (e *env) must(o runOpt, name string, args ...string) result {
	e.t.Helper()
	r := e.run(o, name, args...)
	if r.failed() {
		e.t.Fatalf("%s: %s", display(name, args), r)
	}
	return r
}

func (e *env) docker(args ...string) result {
	e.t.Helper()
	return e.must(runOpt{}, "docker", args...)
}

// quiet runs a cleanup command: failures are logged, not fatal. It has its
// own deadline, so that it runs after the test's context has ended.
func quiet(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("cleanup: %s %s: %v: %s", name, strings.Join(args, " "), err, tail(string(out), 10))
	}
}

// --- setup ----------------------------------------------------------------------

func newEnv(t *testing.T) *env {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository root is not ../..: %v", err)
	}
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(20 * time.Minute)
	}
	// Leave time for the cleanup: a test killed by -timeout runs none.
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-2*time.Minute))
	t.Cleanup(cancel)

	var id [3]byte
	_, _ = rand.Read(id[:])
	e := &env{t: t, ctx: ctx, root: root, runID: hex.EncodeToString(id[:]), rec: &recorder{images: map[string]bool{}}}
	e.work, err = os.MkdirTemp("", "agentbox-e2e-"+e.runID+"-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so that it runs last.
	t.Cleanup(func() {
		if err := os.RemoveAll(e.work); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	t.Logf("run %s, scratch directory %s", e.runID, e.work)
	return e
}

// lock makes runs of the test on one machine take turns: they share the
// fixed subnet, and each removes what earlier runs left.
func (e *env) lock() {
	dir := os.Getenv("AGENTBOX_E2E_STATE")
	if dir == "" {
		dir = "/var/tmp/agentbox-e2e"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "e2e-test.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		e.t.Fatalf("another run of the end-to-end test holds %s (%v); runs on one machine take turns", f.Name(), err)
	}
	e.t.Cleanup(func() { f.Close() })
}

// scratchDir is the name os.MkdirTemp gives the scratch directory.
var scratchDir = regexp.MustCompile(`^agentbox-e2e-[0-9a-f]{6}-[0-9]+$`)

// removeLeftovers removes what a killed earlier run of this test left: its
// fake hosts, its network (which holds 198.18.0.0/24) and its sandboxes.
func (e *env) removeLeftovers() {
	t := e.t
	ids := strings.Fields(e.docker("ps", "-aq", "--filter", "label="+runLabel).stdout)
	// Compose projects of earlier runs.
	projects := map[string]bool{}
	for _, line := range strings.Split(e.docker("ps", "-a", "--format", `{{.Label "com.docker.compose.project"}}`).stdout, "\n") {
		if strings.HasPrefix(line, projectPre) {
			projects[line] = true
		}
	}
	for _, line := range strings.Split(e.docker("volume", "ls", "--format", `{{.Label "com.docker.compose.project"}}`).stdout, "\n") {
		if strings.HasPrefix(line, projectPre) {
			projects[line] = true
		}
	}
	for p := range projects {
		t.Logf("removing the sandbox %s left by an earlier run", p)
		quiet(t, "docker", "compose", "-p", p, "down", "--volumes", "--timeout", "1")
	}
	if len(ids) > 0 {
		t.Logf("removing %d containers left by an earlier run", len(ids))
		quiet(t, "docker", append([]string{"rm", "-f", "-v"}, ids...)...)
	}
	for _, n := range strings.Fields(e.docker("network", "ls", "-q", "--filter", "label="+runLabel).stdout) {
		t.Logf("removing the network %s left by an earlier run", n)
		quiet(t, "docker", "network", "rm", n)
	}
	var old []string
	for _, line := range strings.Split(e.docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}").stdout, "\n") {
		if strings.HasPrefix(line, projectPre) || strings.HasPrefix(line, "agentbox-e2e/fakenet:") {
			old = append(old, line)
		}
	}
	if len(old) > 0 {
		t.Logf("removing images left by an earlier run: %v", old)
		quiet(t, "docker", append([]string{"image", "rm", "-f"}, old...)...)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentbox-e2e-*-*"))
	for _, d := range dirs {
		if d != e.work && scratchDir.MatchString(filepath.Base(d)) {
			t.Logf("removing the scratch directory %s left by an earlier run", d)
			_ = os.RemoveAll(d)
		}
	}
}

// buildAgentbox builds bin/agentbox once.
func (e *env) buildAgentbox() {
	e.agentbox = filepath.Join(e.root, "bin", "agentbox")
	r := e.must(runOpt{dir: e.root}, "go", "build", "-o", e.agentbox, "./cmd/agentbox")
	e.timed("go build bin/agentbox", r.took)
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRegistries builds and starts internal/e2e/registry: the container
// registry on 127.0.0.1:5000 (another free port if 5000 is taken) and the
// fake npm registry on the docker0 gateway, where build containers reach it.
func (e *env) startRegistries() {
	t := e.t
	bin := filepath.Join(e.work, "registry")
	e.must(runOpt{dir: e.root}, "go", "build", "-o", bin, "./internal/e2e/registry")

	e.bridgeGW = e.bridgeAddress()
	addr := "127.0.0.1:5000"
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Logf("127.0.0.1:5000 is taken (%v); the registry takes a free port", err)
		addr = "127.0.0.1:0"
	} else {
		ln.Close()
	}
	cmd := exec.Command(bin, "-v", "-addr", addr, "-blobs-dir", filepath.Join(e.work, "blobs"),
		"-npm-addr", net.JoinHostPort(e.bridgeGW, "0"), "-npm-package", npmPackage+"="+npmVersion, "-npm-tree",
		"-debian-addr", net.JoinHostPort(e.bridgeGW, "0"))
	e.regLog = &syncBuffer{}
	t.Cleanup(func() { // after the registry stopped
		if t.Failed() {
			t.Logf("registry log (last lines):\n%s", tail(e.regLog.String(), 60))
		}
	})
	stdout := startProcess(t, cmd, e.regLog)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(60 * time.Second)
	for e.registry == "" || e.npmURL == "" || e.debianURL == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the registry exited: %s", e.regLog)
			}
			if a, ok := strings.CutPrefix(l, "registry "); ok {
				e.registry = a
			} else if u, ok := strings.CutPrefix(l, "npm "); ok {
				e.npmURL = u
			} else if u, ok := strings.CutPrefix(l, "debian "); ok {
				e.debianURL = strings.TrimSuffix(u, "/")
			}
		case <-timeout:
			t.Fatalf("the registry did not start within 60 s: %s", e.regLog)
		}
	}
	go func() {
		for range lines {
		}
	}()
	t.Logf("container registry %s, fake npm %s, Debian snapshot stand-in %s", e.registry, e.npmURL, e.debianURL)
	e.config = strings.TrimPrefix(e.settings(standIns{})[0], "XDG_CONFIG_HOME=")
}

// standIns are what a project's builds and bump use in place of Debian's
// archive and npm's registry, as a user's agentbox settings name them.
type standIns struct {
	npm    string   // npm.registry; "": npm's own configuration
	plain  bool     // the Debian stand-in as a plain mirror (debian.layout: plain)
	debian string   // debian.archive in place of the stand-in's
	ca     []string // ca_certificates
}

// writeSettings writes s as the agentbox settings file of the
// configuration directory config ($XDG_CONFIG_HOME): the one place the
// stand-ins are given to agentbox.
func (e *env) writeSettings(config string, s standIns) {
	archive := e.debianURL
	if s.debian != "" {
		archive = s.debian
	}
	y := "debian:\n  archive: " + archive + "\n"
	if s.plain {
		y = "debian:\n  layout: plain\n  archive: " + e.debianURL + "/plain/debian\n  security: " + e.debianURL + "/plain/debian-security\n"
	}
	if s.npm != "" {
		y += "npm:\n  registry: " + s.npm + "\n"
	}
	if len(s.ca) > 0 {
		y += "ca_certificates: [" + strings.Join(s.ca, ", ") + "]\n"
	}
	if err := os.MkdirAll(filepath.Join(config, "agentbox"), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "agentbox", settings.FileName), []byte(y), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// settings writes s in a configuration directory of its own and returns
// the environment that points agentbox at it.
func (e *env) settings(s standIns) []string {
	dir, err := os.MkdirTemp(e.work, "config-")
	if err != nil {
		e.t.Fatal(err)
	}
	e.writeSettings(dir, s)
	return []string{"XDG_CONFIG_HOME=" + dir}
}

// settingsEnviron gives what reads no agentbox settings (docker compose run
// by hand, the Dev Containers CLI) the build variables of the settings
// that agentbox would read with env (agentbox's own BuildEnv): the way
// docs/settings.md ("Behind a proxy or a mirror") gives them to a Dev Container.
func (e *env) settingsEnviron(environ, env []string) []string {
	config := e.config
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			config = v
		}
	}
	if config == "" {
		return environ
	}
	s, err := settings.Load(filepath.Join(config, "agentbox", settings.FileName), func(string) string { return "" })
	if err != nil {
		e.t.Fatal(err)
	}
	return s.BuildEnv(environ)
}

// startProcess starts cmd, its stderr going to log, and returns its
// stdout. It is stopped at the end of the test (SIGTERM, SIGKILL after
// 10 s), and killed with the test process if that dies first.
func startProcess(t *testing.T, cmd *exec.Cmd, log io.Writer) io.Reader {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return stdout
}

// bridgeAddress returns the host's IPv4 address on Docker's default bridge,
// where build containers reach the host. It reads the bridge interface
// itself: a daemon that has just created docker0 (Debian's Engine 20.10)
// reports the network's subnet but no IPAM Gateway.
func (e *env) bridgeAddress() string {
	out := e.docker("network", "inspect", "bridge", "--format",
		`{{index .Options "com.docker.network.bridge.name"}} {{range .IPAM.Config}}{{.Gateway}}{{end}}`).stdout
	name, gw, _ := strings.Cut(strings.TrimSpace(out), " ")
	if name == "" {
		name = "docker0"
	}
	var addrs []net.Addr
	if ifc, err := net.InterfaceByName(name); err == nil {
		addrs, _ = ifc.Addrs()
	}
	addr, err := pickBridgeAddress(addrs, gw)
	if err != nil {
		e.t.Fatalf("the default bridge %s: %v", name, err)
	}
	return addr
}

// pickBridgeAddress prefers the bridge interface's first IPv4 address and
// falls back to the IPAM gateway.
func pickBridgeAddress(addrs []net.Addr, ipamGateway string) (string, error) {
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	if ip := net.ParseIP(strings.TrimSpace(ipamGateway)); ip != nil && ip.To4() != nil {
		return ip.String(), nil
	}
	return "", fmt.Errorf("no IPv4 address on the interface and no IPAM gateway (%q)", ipamGateway)
}

var digestRef = regexp.MustCompile(`^(\S+)@(sha256:[0-9a-f]{64})$`)

// pushBase pushes the base image to the local registry.
func (e *env) pushBase() {
	r := e.must(runOpt{dir: e.root}, "bash", "scripts/e2e/base-image.sh", e.registry)
	ref := strings.TrimSpace(r.stdout)
	m := digestRef.FindStringSubmatch(ref)
	if m == nil {
		e.t.Fatalf("scripts/e2e/base-image.sh printed %q, want REF@sha256:...", ref)
	}
	e.baseTag, e.baseRef = m[1], ref
	e.timed("push the base image to the local registry", r.took)
	e.t.Cleanup(func() { quiet(e.t, "docker", "image", "rm", e.baseTag) }) // the tag only
}

// startFakeNet builds the fake hosts' image and starts the network and hosts.
func (e *env) startFakeNet() {
	t := e.t
	start := time.Now()
	ctxDir := filepath.Join(e.work, "fakenet-image")
	if err := os.MkdirAll(ctxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: e.root, env: []string{"CGO_ENABLED=0"}}, "go", "build", "-trimpath", "-o", filepath.Join(ctxDir, "fakenet"), "./internal/e2e/testdata/fakenet")
	dockerfile := "FROM " + baseImage + "\nCOPY fakenet /usr/local/bin/fakenet\nENTRYPOINT [\"/usr/local/bin/fakenet\"]\n"
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	e.fakeImage = "agentbox-e2e/fakenet:" + e.runID
	e.docker("build", "-q", "--label", runLabel+"="+e.runID, "-t", e.fakeImage, ctxDir)
	t.Cleanup(func() { quiet(t, "docker", "image", "rm", "-f", e.fakeImage) })

	// An internal network: the fake hosts reach nothing beyond it.
	e.netName = "agentbox-e2e-" + e.runID
	e.docker("network", "create", "--driver", "bridge", "--internal", "--subnet", fakeSubnet, "--gateway", fakeGateway,
		"--label", runLabel+"="+e.runID, e.netName)
	t.Cleanup(func() { quiet(t, "docker", "network", "rm", e.netName) })

	// The payload: 1 MiB that no other run serves.
	e.payload = make([]byte, payloadSize)
	_, _ = rand.Read(e.payload)
	for name, body := range map[string][]byte{"web": e.payload, "decoy": []byte("decoy: this host is not allowed\n")} {
		dir := filepath.Join(e.work, "srv-"+name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "payload.bin"), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.dnsName = "agentbox-e2e-" + e.runID + "-dns"
	e.webName = "agentbox-e2e-" + e.runID + "-web"
	e.decoyName = "agentbox-e2e-" + e.runID + "-decoy"
	runHost := func(name, ip string, args ...string) {
		e.docker(append([]string{"run", "-d", "--name", name, "--label", runLabel + "=" + e.runID,
			"--network", e.netName, "--ip", ip}, args...)...)
		t.Cleanup(func() {
			if t.Failed() {
				if r := e.cleanup().run(runOpt{}, "docker", "logs", name); r.code == 0 {
					t.Logf("log of %s:\n%s%s", name, tail(r.stdout, 60), tail(r.stderr, 20))
				}
			}
			quiet(t, "docker", "rm", "-f", "-v", name)
		})
	}
	runHost(e.dnsName, dnsIP, e.fakeImage, "dns", "-listen", ":53", "-a", allowedName+"="+webIP, "-a", neverName+"="+neverIP, "-a", forgeName+"="+forgeIP, "-default", decoyIP,
		"-many", fmt.Sprintf("%s=%d", bigName, bigCount))
	runHost(e.webName, webIP, "-v", filepath.Join(e.work, "srv-web")+":/srv:ro", e.fakeImage, "http", "-listen", ":80", "-dir", "/srv", "-name", "web")
	runHost(e.decoyName, decoyIP, "-v", filepath.Join(e.work, "srv-decoy")+":/srv:ro", e.fakeImage, "http", "-listen", ":80", "-dir", "/srv", "-name", "decoy")

	// Without a sandbox, the fake internet answers every name and serves:
	// what the sandbox then refuses, its firewall refused.
	script := `set -e
getent hosts ` + allowedName + `
getent hosts ` + unlistedName + `
for h in ` + allowedName + ` ` + unlistedName + `; do
	exec 3<>/dev/tcp/$h/80
	printf 'HEAD /payload.bin HTTP/1.0\r\n\r\n' >&3
	IFS= read -r status <&3
	echo "$h: $status"
	exec 3<&-
done`
	var r result
	for i := 0; ; i++ { // the servers need a moment to listen
		r = e.run(runOpt{}, "docker", "run", "--rm", "--label", runLabel+"="+e.runID, "--network", e.netName, "--ip", probeIP, "--dns", dnsIP, baseImage, "bash", "-c", script)
		if !r.failed() || i == 10 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if r.failed() {
		t.Fatalf("the fake internet does not work without a sandbox: %s", r)
	}
	for _, want := range []string{
		`(?m)^` + regexp.QuoteMeta(webIP) + `\s+` + regexp.QuoteMeta(allowedName) + `$`,
		`(?m)^` + regexp.QuoteMeta(decoyIP) + `\s+` + regexp.QuoteMeta(unlistedName) + `$`,
		regexp.QuoteMeta(allowedName + ": HTTP/1.0 200 OK"),
		regexp.QuoteMeta(unlistedName + ": HTTP/1.0 200 OK"),
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Fatalf("the fake internet without a sandbox: want %s in:\n%s", want, r.stdout)
		}
	}
	e.timed("fake internet: build, network, DNS and web hosts", time.Since(start))
}

// logsOf returns a container's log (stdout and stderr).
func (e *env) logsOf(name string) string {
	r := e.run(runOpt{}, "docker", "logs", name)
	return r.stdout + r.stderr
}

// --- projects ---------------------------------------------------------------------

// project is a test project directory with its agentbox.yaml.
type project struct {
	e        *env
	what     string // none, claude
	name     string // compose project name
	dir      string
	override string // compose override file: the egress uses the fake DNS
}

// newProject writes agentbox.yaml for agent, in a git repository (so that
// the .git/hooks and .git/config probes run).
func (e *env) newProject(what, agent string) *project {
	p := &project{e: e, what: what, name: projectPre + e.runID + "-" + what}
	p.dir = filepath.Join(e.work, what)
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	yaml := fmt.Sprintf(`# agentbox end-to-end test project (%s)
version: 1
name: %s
agent: %s
image:
  base: %s
egress:
  image: %s
network:
  domains:
    - host: %s
      ports: [80]
resources:
  memory: 256m
  pids: 256
devcontainer:
  ide: none
# A never name: the grant resolver then asks the upstreams through the
# never filter (perl-base, as the dns user), so every grant of a name in
# the e2e goes through it.
elevation:
  never: [%s]
# The probes aim at the test's own hosts; the metadata probe too (the
# network lab probes 169.254.169.254 itself, in a namespace with no route out).
verify:
  allowed: %s:80
  unlisted_name: %s
  unlisted_address: %s:80
  resolver: %s
  ipv6_address: "[2001:db8::1]:80"
  metadata_address: %s:81
`, what, p.name, agent, e.baseTag, e.baseTag, allowedName, neverName, allowedName, unlistedName, decoyIP, dnsIP, decoyIP)
	if err := os.WriteFile(filepath.Join(p.dir, "agentbox.yaml"), []byte(yaml), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(p.dir, "README"), []byte("a test project\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	// The sandbox works in a clone of the project's git database.
	e.must(runOpt{dir: p.dir}, "git", "add", "README", "agentbox.yaml")
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=agentbox e2e", "-c", "user.email=e2e@agentbox.invalid", "commit", "-q", "-m", "the test project")
	p.override = filepath.Join(e.work, what+".override.yml")
	override := fmt.Sprintf(`# agentbox e2e: the egress service asks the test's fake upstream DNS, on the
# test's own network; nothing else changes.
services:
  egress:
    dns: [%s]
    networks:
      default: {}
      fakenet: {}
networks:
  fakenet:
    name: %s
    external: true
`, dnsIP, e.netName)
	if err := os.WriteFile(p.override, []byte(override), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(p.remove)
	return p
}

// in returns the project for the env of a subtest.
func (p *project) in(e *env) *project {
	c := *p
	c.e = e
	return &c
}

func (p *project) composeFile() string {
	return filepath.Join(p.dir, ".agentbox", "docker-compose.yml")
}

// agentbox runs bin/agentbox in the project.
func (p *project) agentbox(env []string, args ...string) result {
	p.e.t.Helper()
	return p.e.run(runOpt{dir: p.dir, env: env}, p.e.agentbox, args...)
}

func (p *project) mustAgentbox(env []string, args ...string) result {
	p.e.t.Helper()
	r := p.agentbox(env, args...)
	if r.failed() {
		p.e.t.Fatalf("agentbox %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// compose runs docker compose on the generated file and the override, with
// project name name (default: the project's).
func (p *project) compose(name string, extraFiles []string, env []string, args ...string) result {
	p.e.t.Helper()
	if name == "" {
		name = p.name
	}
	argv := []string{"compose", "-f", p.composeFile()}
	for _, f := range extraFiles {
		argv = append(argv, "-f", f)
	}
	argv = append(argv, "-p", name)
	return p.e.run(runOpt{dir: p.dir, env: env}, "docker", append(argv, args...)...)
}

// container returns the container ID of a service of compose project name,
// or "" when there is none.
func (e *env) container(project, service string) string {
	e.t.Helper()
	r := e.run(runOpt{}, "docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project, "--filter", "label=com.docker.compose.service="+service)
	if r.failed() {
		if e.cleaning {
			return ""
		}
		e.t.Fatalf("docker ps: %s", r)
	}
	ids := strings.Fields(r.stdout)
	if len(ids) > 1 {
		e.t.Fatalf("%d containers of %s/%s", len(ids), project, service)
	}
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// containerState is the part of docker inspect the test reads.
type containerState struct {
	Status     string
	Running    bool
	ExitCode   int
	StartedAt  time.Time
	FinishedAt time.Time
	Health     *struct {
		Status string
		Log    []struct {
			Start    time.Time
			End      time.Time
			ExitCode int
			Output   string
		}
	}
}

func (e *env) state(id string) containerState {
	var s containerState
	r := e.docker("inspect", "--format", "{{json .State}}", id)
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		e.t.Fatalf("docker inspect %s: %v", id, err)
	}
	return s
}

// trackImages records the IDs of the images compose built for project
// name, to remove them at the end even when a later build untagged them.
func (e *env) trackImages(name string) {
	r := e.run(runOpt{}, "docker", "image", "ls", "-q", "--no-trunc", "--filter", "reference="+name+"-*")
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	for _, id := range strings.Fields(r.stdout) {
		e.rec.images[id] = true
	}
}

// removeImages removes the tracked images; registered once.
func (e *env) removeImages() {
	e.rec.mu.Lock()
	ids := slices.Sorted(maps.Keys(e.rec.images))
	tags := slices.Clone(e.rec.tags)
	e.rec.mu.Unlock()
	if len(ids) > 0 {
		quiet(e.t, "docker", append([]string{"image", "rm", "-f"}, ids...)...)
	}
	if len(tags) > 0 {
		quiet(e.t, "docker", append([]string{"image", "rm"}, tags...)...) // the tags only
	}
}

// remove takes down every compose project of this test project (also the
// fault case's and the Dev Container's), with volumes and images.
func (p *project) remove() {
	e := p.e.cleanup()
	t := e.t
	for _, name := range []string{p.name, p.name + "-fault", p.name + "-unhealthy"} {
		e.trackImages(name)
		if t.Failed() {
			for _, svc := range []string{"egress", "agent", "workspace-init"} {
				if id := e.container(name, svc); id != "" {
					t.Logf("log of %s/%s:\n%s", name, svc, tail(e.logsOf(id), 60))
				}
			}
		}
		quiet(t, "docker", "compose", "-p", name, "down", "--volumes", "--remove-orphans", "--timeout", "3")
	}
}

// leftovers lists what the test made and did not remove.
func (e *env) leftovers() []string {
	e = e.cleanup()
	var left []string
	add := func(what string, r result) {
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if l != "" && (strings.Contains(l, e.runID)) {
				left = append(left, what+" "+l)
			}
		}
	}
	add("container", e.run(runOpt{}, "docker", "ps", "-a", "--format", `{{.Names}} {{.Label "com.docker.compose.project"}}`))
	add("network", e.run(runOpt{}, "docker", "network", "ls", "--format", "{{.Name}}"))
	add("volume", e.run(runOpt{}, "docker", "volume", "ls", "--format", "{{.Name}}"))
	add("image", e.run(runOpt{}, "docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}"))
	// Untagged images that compose built for the test's projects.
	for _, what := range []string{"none", "none-fault", "none-unhealthy", "claude"} {
		name := projectPre + e.runID + "-" + what
		r := e.run(runOpt{}, "docker", "image", "ls", "-a", "-q", "--filter", "label=com.docker.compose.project="+name)
		for _, id := range strings.Fields(r.stdout) {
			left = append(left, "image "+id+" (built for "+name+")")
		}
	}
	return left
}

// waitFor polls cond every 200 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}
