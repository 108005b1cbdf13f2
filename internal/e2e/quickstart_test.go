//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The README's Quickstart, followed literally (issue 21): the lines of its
// marked shell block run as written, one by one, in a fresh git project,
// with the e2e's stand-ins given through the user's settings file alone
// (the Debian archive, the npm registry, and the test's registry as the
// Docker Hub mirror of bump; dockerd pulls through it too, configured by
// scripts/e2e/setup.sh). Nothing else of the configuration is the test's:
// agentbox init's file, its defaults (memory, cpus) included. What needs the
// outside world is substituted, each substitution logged and listed in
// CONTRIBUTING.md's end-to-end section:
//   - the model provider: agentbox.yaml gets the fake's address (env:
//     ANTHROPIC_BASE_URL, its address in network.cidrs) after init;
//   - the interactive login: the key in the secrets file and its name in
//     secrets:, and `claude` runs with -p and the fake's prompt;
//   - the machine's resolver: after `agentbox up`, the sandbox is started
//     again with the test's fake DNS (as RealClaude's shell part did), so
//     that no name the CLI asks for leaves the machine.
//
// agentbox up pulls the two pinned FROM references through the daemon
// (docker pull honours registry-mirrors; Engine 20.10's BuildKit, as compose
// drives it, asks Docker Hub itself): the test checks that it did.
const quickstartMarker = "<!-- quickstart:"

// quickstartLines returns the commands of the README's marked block.
func quickstartLines(e *env) []string {
	data, err := os.ReadFile(filepath.Join(e.root, "README.md"))
	if err != nil {
		e.t.Fatal(err)
	}
	var lines []string
	state := 0 // 0 before the marker, 1 before the fence, 2 in the block
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case state == 0 && strings.HasPrefix(l, quickstartMarker):
			state = 1
		case state == 1 && strings.HasPrefix(l, "```"):
			state = 2
		case state == 1 && strings.TrimSpace(l) != "":
			e.t.Fatalf("README.md: the quickstart marker is not followed by a code block but %q", l)
		case state == 2 && strings.HasPrefix(l, "```"):
			return lines
		case state == 2 && strings.TrimSpace(l) != "":
			lines = append(lines, l)
		}
	}
	e.t.Fatalf("README.md: no complete code block after %q", quickstartMarker)
	return nil
}

// command is a Quickstart line without its comment.
func command(line string) string {
	if i := strings.Index(line, "  #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// quickstartFigures, when set to a number of runs, makes the Quickstart
// measure the README's figures: that many walks from nothing to the branch
// (the first may build cold, the rest find warm caches), then agentbox up
// warm (images built) and cold (agentbox down --images, the base images
// removed, Docker's build cache pruned), each that many times, medians logged.
const quickstartFigures = "AGENTBOX_E2E_QUICKSTART_FIGURES"

// quickstart is what the walks share: the stand-ins and the fake model.
type quickstart struct {
	lines  []string
	env    []string // the user's environment: PATH, XDG_CONFIG_HOME, git's identity
	models *modelServer
	port   int
	typed  time.Duration // the last walk's lines
}

func testQuickstart(e *env) {
	t := e.t
	q := &quickstart{lines: quickstartLines(e), models: &modelServer{}}
	t.Logf("the README's Quickstart:\n  %s", strings.Join(q.lines, "\n  "))

	// dockerd pulls Docker Hub's images through the test's registry.
	mirror := "http://" + e.registry
	if out := e.docker("info", "--format", "{{json .RegistryConfig.Mirrors}}").stdout; !strings.Contains(out, `"`+mirror+`/"`) {
		testenv.Unavailable(t, fmt.Sprintf("dockerd's registry-mirrors are %s, not the test's registry %s (scripts/e2e/setup.sh configures it; the registry took another port than 5000?)", strings.TrimSpace(out), mirror))
	}
	npmProxy := npmRegistryProxy(e, "@anthropic-ai/claude-code")
	nodeImage := pushNodeImage(e, "quickstart")
	// The stand-ins under the names agentbox init's file uses.
	copyImage(e, nodeImage, e.registry+"/library/node:24-bookworm-slim")
	copyImage(e, e.baseTag, e.registry+"/library/debian:bookworm-slim")

	ln, err := net.Listen("tcp", net.JoinHostPort(e.bridgeGW, "0"))
	if err != nil {
		t.Fatalf("listening on the host's address on Docker's default bridge: %v", err)
	}
	srv := &http.Server{Handler: q.models}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	q.port = ln.Addr().(*net.TCPAddr).Port

	config := filepath.Join(e.work, "quickstart-config")
	writeFile(t, filepath.Join(config, "agentbox", "settings.yaml"), 0o644, fmt.Sprintf(`debian:
  archive: %s
npm:
  registry: %s
registries:
  mirrors: [%s]
`, e.debianURL, npmProxy, mirror))
	writeFile(t, filepath.Join(config, "agentbox", "secrets.env"), 0o600, "ANTHROPIC_API_KEY="+claudeKey+"\n")
	q.env = []string{
		"PATH=" + filepath.Dir(e.agentbox) + ":" + os.Getenv("PATH"),
		"XDG_CONFIG_HOME=" + config,
		"XDG_STATE_HOME=" + filepath.Join(e.work, "state-quickstart"),
		// The stand-ins come from the settings file alone: e.run's
		// variable is emptied (an empty one is unset).
		"AGENTBOX_DEBIAN_ARCHIVE=", "NPM_CONFIG_REGISTRY=",
		"GIT_AUTHOR_NAME=Quick Start", "GIT_AUTHOR_EMAIL=user@agentbox.invalid",
		"GIT_COMMITTER_NAME=Quick Start", "GIT_COMMITTER_EMAIL=user@agentbox.invalid",
	}
	runs, _ := strconv.Atoi(os.Getenv(quickstartFigures))
	p := q.walk(e, "quickstart")
	if runs < 1 {
		return
	}
	walks := []time.Duration{q.typed}
	for i := 1; i < runs; i++ {
		q.walk(e, fmt.Sprintf("quickstart%d", i))
		walks = append(walks, q.typed)
	}
	e.timed(fmt.Sprintf("quickstart figures: init to the branch, median of %d walks %s", runs, seconds(walks)), median(walks))
	q.upFigures(e, p, runs)
}

// walk follows the Quickstart in a fresh git project named after what and
// returns it, its sandbox down; q.typed is the lines' time.
func (q *quickstart) walk(e *env, what string) *project {
	t := e.t
	fake := q.models.next(claudeCommit)
	p := e.newProject(what, "none")       // its name, override file and cleanup
	p.dir = filepath.Join(e.work, p.name) // agentbox init names the project after it
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := q.env
	e.must(runOpt{dir: p.dir, env: env}, "git", "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(p.dir, "README"), 0o644, "a project\n")
	e.must(runOpt{dir: p.dir, env: env}, "git", "add", "README")
	e.must(runOpt{dir: p.dir, env: env}, "git", "commit", "-q", "-m", "a project")
	defer p.agentbox(env, "down")

	substituted := func(what string) { t.Logf("quickstart: substituted: %s", what) }
	q.typed = 0
	seen := map[string]bool{}
	for _, line := range q.lines {
		cmd := command(line)
		run := line
		if strings.HasPrefix(cmd, "agentbox run -- claude -p ") {
			fake = q.models.next(claudeCommit)
		}
		if cmd == "agentbox shell -- claude" {
			run = "agentbox shell -- claude -p " + shellQuote(claudePrompt)
			substituted("`" + cmd + "` runs as `" + run + "` (the fake model's script; the login is the secrets file's key)")
		}
		if cmd == "agentbox up" && what == "quickstart" {
			for _, ref := range baseRefs(e, p) { // a new user's daemon has none
				quiet(t, "docker", "image", "rm", ref)
			}
		}
		r := e.run(runOpt{dir: p.dir, env: env}, "bash", "-c", run)
		if r.failed() {
			t.Fatalf("the Quickstart's line %q: %s", line, r)
		}
		q.typed += r.took
		if strings.Contains(r.stderr, "Ignoring extra certs") {
			t.Errorf("the Quickstart's line %q: Node warns about NODE_EXTRA_CA_CERTS (no CA in the settings): %s", line, r)
		}
		e.timed(what+": "+cmd, r.took)
		seen[cmd] = true
		switch {
		case cmd == "agentbox init --agent claude":
			if !strings.Contains(readFile(t, filepath.Join(p.dir, "agentbox.yaml")), "\nname: \""+p.name+"\"\n") {
				t.Fatalf("agentbox init did not name the project %s:\n%s", p.name, readFile(t, filepath.Join(p.dir, "agentbox.yaml")))
			}
			useFakeModel(e, p, q.port)
			substituted(fmt.Sprintf("agentbox.yaml: env ANTHROPIC_BASE_URL=http://%s:%d, network.cidrs %s/32 port %d, secrets [ANTHROPIC_API_KEY] (its value in the secrets file)", e.bridgeGW, q.port, e.bridgeGW, q.port))
		case cmd == "agentbox bump":
			lock := readFile(t, filepath.Join(p.dir, "agentbox.lock"))
			for _, want := range []string{`"node:24-bookworm-slim": "sha256:`, `"debian:bookworm-slim": "sha256:`, `"@anthropic-ai/claude-code":`} {
				if !strings.Contains(lock, want) {
					t.Fatalf("agentbox.lock lacks %q:\n%s", want, lock)
				}
			}
		case cmd == "agentbox up":
			e.trackImages(p.name)
			if what == "quickstart" && !strings.Contains(r.stderr, "agentbox: pulling the base image") {
				t.Errorf("agentbox up pulled no base image through the mirror (the daemon had them?): %s", r)
			}
			upWithFakeDNS(e, p, append(slices.Clone(env), "ANTHROPIC_API_KEY="+claudeKey))
			substituted("after `agentbox up`, the sandbox starts again with the test's fake DNS (docker compose with an override file)")
		case strings.HasPrefix(cmd, "agentbox shell -- claude"):
			checkClaudeTurns(e, fake, r)
		case strings.HasPrefix(cmd, "agentbox run -- claude -p "):
			checkClaudeTurns(e, fake, r)
			m := regexp.MustCompile(`(?m)^  branch   (?:refs/heads/)?(agentbox/[^:\s]+): new, 1 new commits$`).FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("agentbox run: no new branch with one commit in its summary: %s", r)
			}
			checkClaudeCommit(e, p, "refs/heads/"+m[1])
			p.mustAgentbox(env, "rm", strings.TrimPrefix(m[1], "agentbox/"))
			seen["agentbox run -- claude"] = true
		}
	}
	for _, want := range []string{"agentbox init --agent claude", "agentbox bump", "agentbox up", "agentbox shell -- claude", "agentbox fetch", "agentbox run -- claude"} {
		if !seen[want] {
			t.Fatalf("the Quickstart has no line %q (the test substitutes around it)", want)
		}
	}
	e.timed(what+": every line, init to the branch", q.typed)
	checkClaudeCommit(e, p, "refs/heads/agentbox/main")
	names := askedNames(e.logsOf(e.container(p.name, "egress")))
	t.Logf("claude (%s) asked the resolver for: %q", what, names)
	p.mustAgentbox(env, "down")
	for _, n := range names {
		if claudeCatalogName(n) {
			t.Fatalf("claude asked for %s, a name its catalog entry allows: under agentbox run it would leave the machine; the test stops here", n)
		}
	}
	return p
}

// upFigures measures agentbox up on p, runs times each: warm (images
// built), then cold (no image, no base image, no build cache).
func (q *quickstart) upFigures(e *env, p *project, runs int) {
	var warm, cold []time.Duration
	for range runs {
		r := p.mustAgentbox(q.env, "up")
		warm = append(warm, r.took)
		p.mustAgentbox(q.env, "down")
	}
	for range runs {
		// Cold: no image of the sandbox, no base image, no build cache;
		// the stand-ins (npm, Debian, the registry) stay warm.
		p.mustAgentbox(q.env, "down", "--images")
		for _, ref := range baseRefs(e, p) {
			e.docker("image", "rm", ref)
		}
		e.docker("builder", "prune", "-af")
		r := p.mustAgentbox(q.env, "up")
		e.trackImages(p.name)
		cold = append(cold, r.took)
		p.mustAgentbox(q.env, "down")
	}
	e.timed(fmt.Sprintf("quickstart figures: agentbox up warm, median of %d %s", runs, seconds(warm)), median(warm))
	e.timed(fmt.Sprintf("quickstart figures: agentbox up, images removed, median of %d %s", runs, seconds(cold)), median(cold))
}

func seconds(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%.1f", d.Seconds()))
	}
	return "(" + strings.Join(s, ", ") + " s)"
}

// useFakeModel points agentbox init's file at the fake model: its address
// in network.cidrs and ANTHROPIC_BASE_URL, the key by name in secrets.
func useFakeModel(e *env, p *project, port int) {
	path := filepath.Join(p.dir, "agentbox.yaml")
	data := readFile(e.t, path)
	for _, r := range []struct{ line, with string }{
		{`  cidrs: []`, fmt.Sprintf(`  cidrs: [{cidr: %s/32, ports: [%d]}]`, e.bridgeGW, port)},
		{`env: {}`, fmt.Sprintf(`env: {ANTHROPIC_BASE_URL: "http://%s:%d"}`, e.bridgeGW, port)},
		{`secrets: []`, `secrets: [ANTHROPIC_API_KEY]`},
	} {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(r.line) + `( .*)?$`)
		if n := len(re.FindAllString(data, -1)); n != 1 {
			e.t.Fatalf("agentbox.yaml from init: %d lines %q, want 1:\n%s", n, r.line, data)
		}
		data = re.ReplaceAllLiteralString(data, r.with)
	}
	writeFile(e.t, path, 0o644, data)
}

// copyImage copies an image (or index) within the test's registry.
func copyImage(e *env, from, to string) {
	src, err := name.ParseReference(from, name.Insecure)
	if err != nil {
		e.t.Fatal(err)
	}
	dst, err := name.ParseReference(to, name.Insecure)
	if err != nil {
		e.t.Fatal(err)
	}
	desc, err := remote.Get(src)
	if err != nil {
		e.t.Fatalf("reading %s: %v", from, err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err == nil {
			err = remote.WriteIndex(dst, idx)
		}
		if err != nil {
			e.t.Fatalf("copying %s to %s: %v", from, to, err)
		}
		return
	}
	img, err := desc.Image()
	if err == nil {
		err = remote.Write(dst, img)
	}
	if err != nil {
		e.t.Fatalf("copying %s to %s: %v", from, to, err)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeFile(t interface{ Fatal(...any) }, path string, mode os.FileMode, body string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t interface{ Fatal(...any) }, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// baseRefs are the FROM references of p's generated Dockerfiles.
func baseRefs(e *env, p *project) []string {
	var refs []string
	for _, f := range []string{"agent.Dockerfile", "egress.Dockerfile"} {
		for _, m := range regexp.MustCompile(`(?m)^FROM (\S+@sha256:[0-9a-f]{64})`).FindAllStringSubmatch(readFile(e.t, filepath.Join(p.dir, ".agentbox", f)), -1) {
			refs = append(refs, m[1])
		}
	}
	return refs
}
