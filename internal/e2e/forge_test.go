//go:build e2e

package e2e

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
	"github.com/agentbox-dev/agentbox/internal/testing/testca"
)

// The fake internet's forge: git http-backend over TLS (fakenet git) at
// forgeIP, which the fake DNS gives forgeName, with a certificate of a CA
// of the test's. forgeToken's variable holds the user's token for it.
const (
	forgeName  = "git.e2e.test"
	forgeIP    = "198.18.0.81"
	forgeToken = "FORGE_TOKEN"
)

// testForge: the git front door (docs/gateway.md, "Pushes scoped") in the
// real egress image, with the agent's real git and its generated system
// git config, against a forge of the fake internet. The egress image is
// built FROM a base image that holds the forge's CA in
// /usr/local/share/ca-certificates (as a company's base image holds its
// own): Debian's ca-certificates adds it to the bundle the gateway
// verifies the forge against. The token goes from the host's environment
// at agentbox up to egress alone. The agent clones a public repository
// without the token and a listed one with it, pushes to a listed branch
// (with the token), and is refused a push to main (logged with the
// repository and the ref) and TLS straight to the forge; the agent's
// environment never holds the token.
func testForge(e *env) {
	t := e.t
	ca, err := testca.New()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Server([]net.IP{net.ParseIP(forgeIP)}, forgeName)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	var chain []byte
	for _, der := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	tlsDir := filepath.Join(e.work, "forge-tls")
	repos := filepath.Join(e.work, "forge-repos")
	for path, data := range map[string][]byte{
		filepath.Join(tlsDir, "cert.pem"):              chain,
		filepath.Join(tlsDir, "key.pem"):               pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		filepath.Join(e.work, "forge-ca", "forge.crt"): ca.PEM,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, repo := range []string{"team/app", "team/private", "other/public"} {
		if err := netlab.GitRepo(repos, repo); err != nil {
			t.Fatal(err)
		}
	}
	token := "forge-" + e.runID + "-0123456789abcdef"

	// The forge: fakenet with the host's git (bookworm's, as the base
	// image), which needs only libc, zlib and pcre2, all in minbase.
	ctxDir := filepath.Join(e.work, "forge-image")
	if err := os.MkdirAll(ctxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{"/usr/bin/git": "git", "/usr/lib/git-core/git-http-backend": "git-http-backend"} {
		e.must(runOpt{}, "cp", src, filepath.Join(ctxDir, dst))
	}
	dockerfile := "FROM " + e.fakeImage + "\nCOPY git /usr/bin/git\nCOPY git-http-backend /usr/lib/git-core/git-http-backend\n"
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	forgeImage := "agentbox-e2e/forge:" + e.runID
	e.docker("build", "-q", "--label", runLabel+"="+e.runID, "-t", forgeImage, ctxDir)
	t.Cleanup(func() { quiet(t, "docker", "image", "rm", "-f", forgeImage) })
	forge := "agentbox-e2e-" + e.runID + "-forge"
	e.docker("run", "-d", "--name", forge, "--label", runLabel+"="+e.runID, "--network", e.netName, "--ip", forgeIP,
		"-v", repos+":/repos", "-v", tlsDir+":/tls:ro", forgeImage,
		"git", "-listen", ":443", "-cert", "/tls/cert.pem", "-key", "/tls/key.pem", "-root", "/repos", "-token", token, "-private", "team/private")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of the forge:\n%s", tail(e.logsOf(forge), 60))
		}
		quiet(t, "docker", "rm", "-f", "-v", forge)
	})

	// The egress's base image with the forge's CA, in the local registry.
	caDir := filepath.Join(e.work, "forge-ca")
	if err := os.WriteFile(filepath.Join(caDir, "Dockerfile"), []byte("FROM "+e.baseRef+"\nCOPY forge.crt /usr/local/share/ca-certificates/agentbox-e2e-forge.crt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	caTag := e.registry + "/agentbox-e2e/debian-forge-ca:bookworm"
	e.docker("build", "-q", "--label", runLabel+"="+e.runID, "-t", caTag, caDir)
	t.Cleanup(func() { quiet(t, "docker", "image", "rm", "-f", caTag) })
	e.docker("push", "-q", caTag)

	p := e.newProject("forge", "none")
	path := filepath.Join(p.dir, "agentbox.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(data)
	for old, new := range map[string]string{
		"egress:\n  image: " + e.baseTag + "\n": "egress:\n  image: " + caTag + "\n",
		"      ports: [80]\n":                   "      ports: [80]\n    - host: " + forgeName + "\n      ports: [443]\n",
	} {
		if strings.Count(yaml, old) != 1 {
			t.Fatalf("the project's agentbox.yaml does not hold %q once:\n%s", old, yaml)
		}
		yaml = strings.Replace(yaml, old, new, 1)
	}
	yaml += fmt.Sprintf(`git:
  forges:
    - host: %s
      token: %s
      repos: [team/private]
      push:
        - repo: team/app
          branches: ["agent/*"]
secrets: [%s]
`, forgeName, forgeToken, forgeToken)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=agentbox e2e", "-c", "user.email=e2e@agentbox.invalid", "commit", "-q", "-a", "-m", "the forge")
	p.mustAgentbox(nil, "bump")
	env := []string{forgeToken + "=" + token}
	p.mustAgentbox(env, "up")
	e.trackImages(p.name)
	defer p.agentbox(nil, "down")
	upWithFakeDNS(e, p, env)

	// The agent's git goes to the front door through GIT_CONFIG_COUNT's
	// url.insteadOf; without it (GIT_CONFIG_COUNT=0), git goes straight to
	// the forge, certificate unchecked so that only the gateway can stop it.
	const script = `set -u
cd /tmp
rm -rf public app private
git clone -q https://` + forgeName + `/other/public.git public && echo clone-public
git clone -q https://` + forgeName + `/team/private.git private && echo clone-private
git clone -q https://` + forgeName + `/team/app.git app && echo clone-app
cd app
git -c user.name=agent -c user.email=agent@agentbox.invalid commit -q --allow-empty -m "the agent's change"
git push -q origin HEAD:refs/heads/agent/e2e && echo push-agent
git push -q origin HEAD:refs/heads/main 2>/dev/null || echo refused-main
GIT_CONFIG_COUNT=0 GIT_SSL_NO_VERIFY=1 GIT_TERMINAL_PROMPT=0 timeout 20 git ls-remote https://` + forgeName + `/other/public.git >/dev/null 2>&1 || echo refused-direct
echo "token ${` + forgeToken + `:-unset}"`
	main := netlab.GitRef(repos, "team/app", "refs/heads/main")
	r := p.mustAgentbox(nil, "shell", "--", "bash", "-c", script)
	want := []string{"clone-public", "clone-private", "clone-app", "push-agent", "refused-main", "refused-direct", "token", catalog.KeyPlaceholder}
	if got := strings.Fields(r.stdout); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the agent's git through the front door: got %q, want %q\n%s", got, want, r)
	}
	if netlab.GitRef(repos, "team/app", "refs/heads/agent/e2e") == "" {
		t.Errorf("the forge has no refs/heads/agent/e2e in team/app")
	}
	if got := netlab.GitRef(repos, "team/app", "refs/heads/main"); got != main || main == "" {
		t.Errorf("team/app's main moved: %q, was %q", got, main)
	}
	// Nowhere in the agent's processes: the token.
	agent := e.container(p.name, "agent")
	if r := e.docker("exec", agent, "bash", "-c", "cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n'"); strings.Contains(r.stdout, token) {
		t.Errorf("an agent process holds the token")
	}

	// agentbox verify probes the front door as the user's sandbox has it,
	// with every other probe (and the forge's log has its last lines by
	// then: each is written as its request ends).
	verify(e, p, append(coreProbes, "network/git front door")...)

	// The forge's side: every request by forgeName, the token for the
	// listed repositories alone, and one service query for other/public
	// (the clone's: the direct one never reached it).
	all := forgeLog(e, forge)
	if all == 0 || forgeLog(e, forge, "git "+forgeName+" ") != all {
		t.Errorf("the forge's requests: %d, %d of them by SNI %s\n%s", all, forgeLog(e, forge, "git "+forgeName+" "), forgeName, tail(e.logsOf(forge), 30))
	}
	// (A clone's git-upload-pack is two requests in protocol v2: ls-refs,
	// then fetch.)
	for _, c := range []struct {
		parts    []string
		min, max int
	}{
		{[]string{"/other/public.git/", "auth=token"}, 0, 0},
		{[]string{"/other/public.git/info/refs"}, 1, 1},
		{[]string{"/other/public.git/git-upload-pack", "auth=none", " 200"}, 1, 2},
		{[]string{"/team/private.git/git-upload-pack", "auth=token", " 200"}, 1, 2},
		{[]string{"/team/app.git/git-receive-pack", "auth=token", " 200"}, 1, 1},
	} {
		if got := forgeLog(e, forge, c.parts...); got < c.min || got > c.max {
			t.Errorf("the forge's log: %d requests with %q, want %d to %d\n%s", got, c.parts, c.min, c.max, tail(e.logsOf(forge), 30))
		}
	}

	// The records: the refused push with its repository and ref, and the
	// direct TLS refused by name.
	r = p.mustAgentbox(nil, "connections", "--json")
	var log struct {
		Connections []struct {
			Name, Verdict, Reason, Why string
			Git                        *struct{ Repo, Service, Verdict, Reason, Refs string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &log); err != nil {
		t.Fatalf("agentbox connections --json: %v\n%s", err, r)
	}
	var pushed, refusedPush, refusedDirect bool
	for _, c := range log.Connections {
		if g := c.Git; g != nil && g.Repo == "team/app" && g.Service == "receive-pack" {
			pushed = pushed || g.Verdict == "push" && strings.Contains(g.Refs, "refs/heads/agent/e2e")
			refusedPush = refusedPush || g.Verdict == "refused" && g.Reason == "ref-not-allowed" && strings.Contains(g.Refs, "refs/heads/main")
		}
		refusedDirect = refusedDirect || c.Git == nil && c.Name == forgeName && c.Verdict == "refused"
	}
	if !pushed || !refusedPush || !refusedDirect {
		t.Errorf("agentbox connections: the push %v, the refused push to main %v, the refused direct TLS %v:\n%s", pushed, refusedPush, refusedDirect, r.stdout)
	}
	if r := p.mustAgentbox(nil, "connections"); strings.Contains(r.stdout+r.stderr, token) {
		t.Errorf("agentbox connections prints the token")
	}
}

// forgeLog is how many of the forge's request lines hold every one of
// parts.
func forgeLog(e *env, forge string, parts ...string) int {
	n := 0
	for _, line := range strings.Split(e.logsOf(forge), "\n") {
		ok := strings.HasPrefix(line, "git ") && strings.Contains(line, " auth=")
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			n++
		}
	}
	return n
}
