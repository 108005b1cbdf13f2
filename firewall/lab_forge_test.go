package firewall_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/connlog"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// The lab's forge (docs/gateway.md, "Pushes scoped"): git http-backend over
// TLS on forgePort of the lab's internet, at the address every unknown
// name resolves to (unlistedV4, unlistedV6), with a certificate of the
// lab's CA for forge.test.
const (
	forgeHost = "forge.test"
	forgePort = 9443
	forgeKey  = "FORGE_TOKEN"
)

var labForge = firewall.Forge{Host: forgeHost, Port: forgePort, Token: forgeKey, TokenRepos: []string{"acme/private"},
	Push: []firewall.ForgePush{{Repo: "acme/app", Branches: []string{"agent/*", "fix-*"}}}}

// forgeLab is a lab whose gateway has labForge's front door, with the
// user's token (realKey) handed over by set-key, and the forge's
// repositories: acme/app, acme/private, other/repo, each with a commit on
// main.
type forgeLab struct {
	*lab
	forge *netlab.Helper
	repos string // the forge's GIT_PROJECT_ROOT
	work  string // the agent's HOME and work tree, its system git config
}

func newForgeLab(t *testing.T) *forgeLab {
	testenvGit(t)
	l := newLab(t)
	c, err := generator.Compile("testdata/lab", generator.CompileOptions{CheckMounts: true})
	if err != nil {
		t.Fatal(err)
	}
	pol := c.Plan().Policy
	pol.Gateway = true
	pol.Domains = append(pol.Domains, firewall.Domain{Name: forgeHost, Ports: []uint16{forgePort}, Sources: []string{"lab"}})
	pol.Forges = []firewall.Forge{labForge}
	files, err := firewall.Render(pol)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rules.nft", "dnsmasq.conf", "entrypoint.sh", "policy.bash"} {
		l.files[name] = files[name]
	}
	l.files["haproxy.cfg"] = []byte(strings.ReplaceAll(string(files["haproxy.cfg"]), "ca-file "+firewall.GatewayCAFile+" ", "ca-file "+labCA+" "))
	caKey, caPEM, ca := newCert(t, "agentbox lab CA", nil, nil, nil)
	key, leaf, _ := newCert(t, forgeHost, []string{forgeHost}, ca, caKey)
	f := &forgeLab{lab: l, repos: tempDir(t, 0o700), work: tempDir(t, 0o777)}
	for _, repo := range []string{"acme/app", "acme/private", "other/repo"} {
		if err := netlab.GitRepo(f.repos, repo); err != nil {
			t.Fatal(err)
		}
	}
	if f.forge, err = l.lab.StartHelper(l.net, "server", 0); err != nil {
		t.Fatal(err)
	}
	certs := map[string]netlab.TLSCert{forgeHost: {Cert: leaf, Key: pemKey(t, key)}}
	l.serve(f.forge, &netlab.ServerConfig{TLS: []netlab.TLSServer{
		{Listen: addr(unlistedV4, forgePort), Certs: certs, Git: f.repos},
		{Listen: addr(unlistedV6, forgePort), Certs: certs, Git: f.repos},
	}})
	spec := l.egressSpec()
	spec.Files[labCA] = netlab.File{Data: caPEM, Mode: 0o644}
	spec.Files[firewall.GatewayGitLua] = netlab.File{Data: firewall.GitLua(), Mode: 0o644}
	p := l.start(spec)
	l.ready(p)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the egress log:\n%s", p.Output())
		}
	})
	if out, code, err := l.egress.EnterInput(realKey+"\n", append(netlab.CapArgv(egressCaps), firewall.EntrypointPath, firewall.SetKeyArg, forgeKey)...); err != nil || code != 0 {
		t.Fatalf("set-key %s: exit %d (%v): %s", forgeKey, code, err, out)
	}
	return f
}

func testenvGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// tempDir is a new directory of mode perm, removed at the end of the test
// (t.TempDir's parent is root's alone; the agent needs its work tree).
func tempDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentbox-forge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// git runs git as the agent in dir (relative to its work tree), with the
// git configuration the generator gives the agent's environment
// (generator.ForgeGitConfig), no prompt, and a proxy in the environment
// that the front door must not go through.
func (f *forgeLab) git(dir string, args ...string) netlab.Response {
	f.t.Helper()
	pairs := generator.ForgeGitConfig([]firewall.Forge{labForge})
	argv := []string{"env", "HOME=" + f.work, "GIT_CONFIG_SYSTEM=/dev/null", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"http_proxy=http://127.0.0.1:1", "GIT_CONFIG_COUNT=" + strconv.Itoa(len(pairs))}
	for i, kv := range pairs {
		argv = append(argv, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	argv = append(append(argv, "git", "-C", filepath.Join(f.work, dir), "-c", "user.name=agent", "-c", "user.email=agent@agentbox.invalid"), args...)
	return f.do(netlab.Request{Op: "exec", Argv: argv, Timeout: 30 * time.Second})
}

// ref is what the forge's repo has at ref, or "".
func (f *forgeLab) ref(repo, ref string) string { return netlab.GitRef(f.repos, repo, ref) }

// gatewayLine waits for the gateway's log line that holds every one of
// parts, from line since on.
func (f *forgeLab) gatewayLine(since int, parts ...string) (string, bool) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		lines := f.egress.Log().Lines()
		for _, l := range lines[min(since, len(lines)):] {
			ok := strings.Contains(l.Text, "agentbox-gateway: ")
			for _, p := range parts {
				ok = ok && strings.Contains(l.Text, p)
			}
			if ok {
				return l.Text, true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", false
}

// TestLabGatewayForge: the agent's real git, through the front door, fetches
// any repository and pushes only to the branches that the policy lists;
// the user's token reaches the forge for the listed repositories alone, and
// never the agent; a refused push is logged with its repository and refs;
// direct TLS to the forge is refused.
func TestLabGatewayForge(t *testing.T) {
	f := newForgeLab(t)
	// A task's agent waits on the front door when the gateway holds no key.
	ready := []byte("GET " + firewall.KeysReadyPath + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if r := f.send("127.0.0.1", firewall.GatewayForgeListenBase, 0, 2*time.Second, "\x00never", ready); !strings.HasPrefix(r.Data, "HTTP/1.1 503") {
		t.Errorf("the front door's readiness before keys-done: %v, want 503", r)
	}
	if out, code, err := f.egress.EnterInput("", append(netlab.CapArgv(egressCaps), firewall.EntrypointPath, firewall.KeysDoneArg)...); err != nil || code != 0 {
		t.Fatalf("keys-done: exit %d (%v): %s", code, err, out)
	}
	if r := f.send("127.0.0.1", firewall.GatewayForgeListenBase, 0, 2*time.Second, "\x00never", ready); !strings.HasPrefix(r.Data, "HTTP/1.1 200") {
		t.Errorf("the front door's readiness after keys-done: %v, want 200", r)
	}
	basic := "[Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+realKey)) + "]"
	t.Run("Fetch", func(t *testing.T) {
		f := &forgeLab{lab: f.on(t), forge: f.forge, repos: f.repos, work: f.work}
		for repo, token := range map[string]bool{"acme/app": true, "acme/private": true, "other/repo": false} {
			since := len(events(t, f.forge, 0))
			dir := strings.ReplaceAll(repo, "/", "-")
			if r := f.git(".", "clone", "-q", labForge.URL()+repo+".git", dir); !r.OK {
				t.Fatalf("clone %s: %v", repo, r)
			}
			got := events(t, f.forge, since)
			if len(got) == 0 {
				t.Errorf("clone %s: the forge saw nothing", repo)
			}
			for _, e := range got {
				auth, has := e.Headers["Authorization"]
				if e.SNI != forgeHost || has != token || has && auth != basic {
					t.Errorf("clone %s: the forge saw %+v, want SNI %s and the token %v", repo, e, forgeHost, token)
				}
			}
		}
	})
	t.Run("Push", func(t *testing.T) {
		testForgePush(t, &forgeLab{lab: f.on(t), forge: f.forge, repos: f.repos, work: f.work})
	})
	t.Run("Raw", func(t *testing.T) {
		testForgeRaw(t, &forgeLab{lab: f.on(t), forge: f.forge, repos: f.repos, work: f.work})
	})
	t.Run("Direct", func(t *testing.T) {
		l := f.on(t)
		l.resolve(forgeHost, "A")
		l.stopped("TLS to the forge", unlistedV4, forgePort, clientHello(forgeHost, false))
		l.stopped("plain HTTP to the forge", unlistedV4, forgePort, httpHead(forgeHost))
	})
	t.Run("NowhereTheAgentReads", func(t *testing.T) { agentSearch(t, f.on(t)) })
	t.Run("Records", func(t *testing.T) {
		log, err := connlog.Parse(strings.NewReader(f.egress.Output()), time.Time{})
		if err != nil || log.BadRecords != 0 {
			t.Fatalf("the records: %v, %d bad", err, log.BadRecords)
		}
		var fetched, refused bool
		for _, r := range log.Connections {
			if r.Git == nil {
				continue
			}
			fetched = fetched || r.Git.Verdict == "fetch" && r.Verdict == connlog.Allowed && r.Name == forgeHost
			refused = refused || r.Git.Refs == "refs/heads/main" && r.Git.Repo == "acme/app" && r.Verdict == connlog.Refused && r.Reason == connlog.WhyGit
		}
		if !fetched || !refused {
			t.Errorf("no record of a fetch (%v) or of the refused push to main (%v) among %d", fetched, refused, len(log.Connections))
		}
	})
	if out := f.egress.Output(); strings.Contains(out, realKey) {
		t.Errorf("the egress log holds the token:\n%s", out)
	}
}

func testForgePush(t *testing.T, f *forgeLab) {
	main := f.ref("acme/app", "refs/heads/main")
	if r := f.git("acme-app", "commit", "-q", "--allow-empty", "-m", "the agent's"); !r.OK {
		t.Fatalf("commit: %v", r)
	}
	if r := f.git("acme-app", "push", "-q", "origin", "HEAD:refs/heads/agent/one"); !r.OK {
		t.Errorf("push to agent/one: %v", r)
	} else if f.ref("acme/app", "refs/heads/agent/one") == "" {
		t.Errorf("push to agent/one passed, but the forge has no agent/one")
	}
	for _, c := range []struct {
		what, repo string
		refs       []string
		want       string // in git's output
		log        []string
	}{
		{"another branch", "acme-app", []string{"refs/heads/main"}, "branch not allowed", []string{`"repo":"acme/app"`, `"refs":"refs/heads/main`, `"verdict":"refused"`, `"reason":"ref-not-allowed"`}},
		{"a tag", "acme-app", []string{"refs/tags/agent/v1"}, "only branches may be pushed", []string{`"repo":"acme/app"`, `"refs":"refs/tags/agent/v1`, `"verdict":"refused"`}},
		{"several refs, one not allowed", "acme-app", []string{"refs/heads/agent/two", "refs/heads/fix-x", "refs/heads/other"},
			"refused with the push's other refs", []string{`"repo":"acme/app"`, `"refs":"refs/heads/agent/two,refs/heads/fix-x,refs/heads/other`, `"verdict":"refused"`}},
		{"another repository", "other-repo", []string{"refs/heads/agent/one"}, "pushes to this repository are not allowed", []string{`"repo":"other/repo"`, `"service":"receive-pack"`, `"verdict":"refused"`, `"reason":"push-not-listed"`, `"refs":"refs/heads/agent/one`}},
		{"a repository fetched with the token", "acme-private", []string{"refs/heads/agent/one"}, "pushes to this repository are not allowed", []string{`"repo":"acme/private"`, `"reason":"push-not-listed"`, `"refs":"refs/heads/agent/one`}},
	} {
		since := len(f.egress.Log().Lines())
		args := []string{"push", "origin"}
		for _, ref := range c.refs {
			args = append(args, "HEAD:"+ref)
		}
		r := f.git(c.repo, args...)
		if r.OK || !strings.Contains(r.Data, c.want) || !strings.Contains(r.Data, "agentbox") {
			t.Errorf("push of %s: %v, want refused with %q", c.what, r, c.want)
		}
		if line, ok := f.gatewayLine(since, c.log...); !ok {
			t.Errorf("push of %s: no gateway log line with %q", c.what, c.log)
		} else {
			t.Logf("push of %s: %s\n%s", c.what, line, r.Data)
		}
	}
	// A pack larger than git's post buffer (1 MiB) goes in chunks, after
	// a probe: allowed, it passes whole; refused, it is refused.
	big := make([]byte, 3<<20)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(f.work, "acme-app", "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.git("acme-app", "add", "big"); !r.OK {
		t.Fatalf("add: %v", r)
	}
	if r := f.git("acme-app", "commit", "-q", "-m", "big"); !r.OK {
		t.Fatalf("commit: %v", r)
	}
	if r := f.git("acme-app", "push", "origin", "HEAD:refs/heads/agent/big"); !r.OK || f.ref("acme/app", "refs/heads/agent/big") == "" {
		t.Errorf("a large push to agent/big: %v", r)
	}
	since := len(f.egress.Log().Lines())
	if r := f.git("acme-app", "push", "origin", "HEAD:refs/heads/big"); r.OK || f.ref("acme/app", "refs/heads/big") != "" {
		t.Errorf("a large push to big: %v, want refused", r)
	} else if _, ok := f.gatewayLine(since, `"refs":"refs/heads/big`, `"verdict":"refused"`); !ok {
		t.Errorf("a large push to big: not logged as refused; git said %s", r.Data)
	} else {
		t.Logf("a large push to big: %s", r.Data)
	}
	for _, ref := range []string{"refs/heads/agent/two", "refs/heads/fix-x", "refs/heads/other", "refs/tags/agent/v1"} {
		if got := f.ref("acme/app", ref); got != "" {
			t.Errorf("a refused push made %s on the forge", ref)
		}
	}
	if f.ref("acme/app", "refs/heads/main") != main || f.ref("other/repo", "refs/heads/agent/one") != "" {
		t.Errorf("a refused push changed the forge")
	}
}

// testForgeRaw sends the front door what git itself would not: a ref name
// with control characters, commands beyond the buffer, other requests.
func testForgeRaw(t *testing.T, f *forgeLab) {
	zero, one := strings.Repeat("0", 40), strings.Repeat("1", 40)
	post := func(body string, extra string) []byte {
		return []byte(fmt.Sprintf("POST /acme/app.git/git-receive-pack HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/x-git-receive-pack-request\r\n%sContent-Length: %d\r\n\r\n%s", extra, len(body), body))
	}
	pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
	var many strings.Builder
	many.WriteString(pkt(zero + " " + one + " refs/heads/agent/0\x00report-status\n"))
	for i := 1; i < 400; i++ {
		many.WriteString(pkt(fmt.Sprintf("%s %s refs/heads/agent/%d\n", zero, one, i)))
	}
	many.WriteString("0000")
	for _, c := range []struct {
		what string
		req  []byte
		want string   // in the answer
		log  []string // in the gateway's line
	}{
		{"a ref with control characters", post(pkt(zero+" "+one+" refs/heads/agent/a\x1b[31mb\x00report-status\n")+"0000", ""),
			"not a valid ref name", []string{`"refs":"refs/heads/agent/a%1B%5B31mb`, `"verdict":"refused"`}},
		{"commands beyond the buffer", post(many.String(), ""), "do not fit in the gateway's buffer", []string{`"reason":"commands-exceed-buffer"`}},
		{"a gzipped push", post(pkt(zero+" "+one+" refs/heads/agent/a\x00report-status\n")+"0000", "Content-Encoding: gzip\r\n"),
			"must not be encoded", []string{`"reason":"encoded-body"`}},
		{"a signed push", post(pkt("push-cert\x00report-status\n")+"0000", ""), "signed pushes are not supported", []string{`"reason":"push-cert"`}},
		{"not git", []byte("GET /acme/app/archive/main.zip HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"), "smart HTTP protocol only", []string{`"reason":"not-git"`}},
		{"a dumb fetch", []byte("GET /acme/app.git/info/refs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"), "smart HTTP protocol only", []string{`"reason":"not-git"`}},
		{"a path with ..", []byte("GET /acme/../other/repo/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"), "smart HTTP protocol only", []string{`"reason":"not-git"`}},
	} {
		since := len(f.egress.Log().Lines())
		r := f.send("127.0.0.1", firewall.GatewayForgeListenBase, 0, 5*time.Second, "\x00never", c.req)
		if !strings.Contains(r.Data, c.want) {
			t.Errorf("%s: %q, want %q", c.what, r.Data, c.want)
		}
		if line, ok := f.gatewayLine(since, c.log...); !ok {
			t.Errorf("%s: no gateway log line with %q", c.what, c.log)
		} else if strings.ContainsAny(line, "\x1b\x00") {
			t.Errorf("%s: the log line holds control characters: %q", c.what, line)
		}
	}
	if f.ref("acme/app", "refs/heads/agent/0") != "" {
		t.Errorf("a refused raw push made a ref")
	}
}
