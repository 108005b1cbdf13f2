package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/bump"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/images/imagestest"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// fakeHub is an in-process registry that answers for every registry host
// (index.docker.io, ghcr.io, ...) through a rewriting transport, and an npm
// registry; nothing leaves loopback.
type fakeHub struct {
	t         *testing.T
	transport http.RoundTripper
	npmURL    string
	latest    map[string]string
	docs      map[string]*npm.Packument // packages served as they are, before latest
	debian    *imagestest.Debian
	osRelease string       // the os-release of the images push makes
	registry  atomic.Value // http.Handler, swappable to simulate faults
}

// rewrite sends every request to the test server, whatever host it names.
type rewrite struct{ target *url.URL }

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.target.Scheme, r.target.Host
	return http.DefaultTransport.RoundTrip(req)
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, latest: map[string]string{"@anthropic-ai/claude-code": "2.1.0", "@openai/codex": "0.60.1"},
		debian: &imagestest.Debian{State: debian.Snapshot{Debian: "20261101T000000Z", Security: "20261101T060000Z"},
			Versions: map[string]string{"ca-certificates": "20230311", "git": "1:2.39.5-0+deb12u2",
				"nodejs": "18.19.0+dfsg-6~deb12u2", "npm": "9.2.0~ds1-1", "dnsmasq-base": "2.90-4~deb12u1",
				"nftables": "1.0.6-2+deb12u2", "jq": "1.6-2.1", "ulogd2": "2.0.8-1", "ulogd2-json": "2.0.8-1", "haproxy": "2.6.12-1+deb12u4"}}}
	h.registry.Store(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.registry.Load().(http.Handler).ServeHTTP(w, r)
	}))
	t.Cleanup(reg.Close)
	u, _ := url.Parse(reg.URL)
	h.transport = rewrite{u}
	npm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pkg, _ := url.PathUnescape(strings.TrimPrefix(r.URL.EscapedPath(), "/"))
		if doc, ok := h.docs[pkg]; ok {
			json.NewEncoder(w).Encode(doc)
			return
		}
		v, ok := h.latest[pkg]
		if !ok {
			http.NotFound(w, r)
			return
		}
		doc, _ := imagestest.NPM{pkg: v}.Packument(r.Context(), pkg)
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(npm.Close)
	h.npmURL = npm.URL
	return h
}

// deps are the collaborators of a bump against h.
func (h *fakeHub) deps() deps {
	d := testDeps()
	d.resolver = func(context.Context, settings.Settings) bump.Registry {
		return images.NewRegistryResolver(images.RegistryOptions{Transport: h.transport, Attempts: 2, Keychain: authn.NewMultiKeychain()})
	}
	d.npm = func(string, settings.Settings) npm.Source {
		return npm.NewClient(npm.Options{Registry: h.npmURL, Transport: http.DefaultTransport, Attempts: 2})
	}
	d.debian = func(settings.Settings) bump.DebianArchive { return h.debian }
	return d
}

// run runs agentbox with args against h, in the project dir (-C).
func (h *fakeHub) run(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runDeps(t, h.deps(), append(args, "-C", dir)...)
}

// push tags a deterministic image (an index when multiArch) whose content
// depends on seed, and returns its digest.
func (h *fakeHub) push(ref, seed string, multiArch bool) string {
	h.t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.osRelease == "" {
		h.osRelease = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_CODENAME=bookworm\n"
	}
	osRelease, err := crane.Layer(map[string][]byte{"etc/os-release": []byte(h.osRelease)})
	if err != nil {
		h.t.Fatal(err)
	}
	img := func(arch string) v1.Image {
		i, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{Architecture: arch, OS: "linux", Author: seed})
		if err != nil {
			h.t.Fatal(err)
		}
		if i, err = mutate.AppendLayers(i, osRelease); err != nil {
			h.t.Fatal(err)
		}
		return i
	}
	opt := remote.WithTransport(h.transport)
	if !multiArch {
		if err := remote.Write(tag, img("amd64"), opt); err != nil {
			h.t.Fatal(err)
		}
		d, _ := img("amd64").Digest()
		return d.String()
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: img("amd64"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: img("arm64"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	if err := remote.WriteIndex(tag, idx, opt); err != nil {
		h.t.Fatal(err)
	}
	d, _ := idx.Digest()
	return d.String()
}

func bumpProject(t *testing.T, yaml, lock string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte(yaml))
	if lock != "" {
		writeFile(t, filepath.Join(dir, "agentbox.lock"), []byte(lock))
	}
	return dir
}

// bumpGolden holds the expected locks and reports of TestBumpGolden.
const bumpGolden = "../../testdata/bump"

// TestBumpGolden: a project with no lock is bumped against the fake
// registries; the lock and the JSON report are golden files, the project
// then generates cleanly, and a second bump finds nothing to change.
func TestBumpGolden(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.push("node:24-bookworm-slim", "node-1", true)
	h.push("debian:bookworm-slim", "debian-1", true)
	h.push("ghcr.io/acme/tools:1.0", "tools-1", false)
	dir := bumpProject(t, "agent: claude\negress:\n  image: ghcr.io/acme/tools:1.0\n", "")

	stdout, stderr, code := h.run(t, dir, "bump", "--json")
	if code != exitOK {
		t.Fatalf("bump: exit %d: %s", code, stderr)
	}
	golden.CompareFile(t, filepath.Join(bumpGolden, "fresh.json"), []byte(stdout))
	lock, _ := os.ReadFile(filepath.Join(dir, "agentbox.lock"))
	golden.CompareFile(t, filepath.Join(bumpGolden, "fresh.lock"), lock)
	if _, stderr, code := h.run(t, dir, "generate", "--check"); code != exitOK {
		t.Errorf("generate --check after bump: %d %s", code, stderr)
	}
	if stdout, stderr, code := h.run(t, dir, "bump", "--check"); code != exitOK || stdout != "" {
		t.Errorf("second bump --check: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// The tag moves and npm publishes: --check reports it (exit 3, nothing
	// written), bump writes it, and the table says what changed.
	h.push("node:24-bookworm-slim", "node-2", true)
	h.latest["@anthropic-ai/claude-code"] = "2.2.0"
	before := readAll(t, dir)
	stdout, _, code = h.run(t, dir, "bump", "--check")
	if code != exitDrift {
		t.Fatalf("bump --check after a move: exit %d", code)
	}
	if !sameTree(before, readAll(t, dir)) {
		t.Error("bump --check wrote files")
	}
	golden.CompareFile(t, filepath.Join(bumpGolden, "moved.txt"), []byte(stdout))
	if _, stderr, code := h.run(t, dir, "bump"); code != exitOK {
		t.Fatalf("bump: %d %s", code, stderr)
	}
	lock, _ = os.ReadFile(filepath.Join(dir, "agentbox.lock"))
	golden.CompareFile(t, filepath.Join(bumpGolden, "moved.lock"), lock)
	df, _ := os.ReadFile(filepath.Join(dir, ".agentbox/agent.Dockerfile"))
	if !strings.Contains(string(df), "@anthropic-ai/claude-code@2.2.0") || !strings.Contains(string(df), "FROM node:24-bookworm-slim@sha256:") {
		t.Errorf("agent.Dockerfile not regenerated:\n%s", df)
	}
}

// TestBumpFailureChangesNothing: one reference of several fails; bump exits
// 1 naming it and its registry, and no file changes.
func TestBumpFailureChangesNothing(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.push("node:24-bookworm-slim", "node-1", true)
	h.push("debian:bookworm-slim", "debian-1", true)
	for _, tt := range []struct {
		name, yaml, want string
	}{
		{"unknown tag", "agent: claude\negress: {image: \"debian:nope\"}\n", `debian:nope`},
		{"unknown repository", "agent: claude\negress: {image: \"ghcr.io/acme/missing:1\"}\n", `ghcr.io`},
		{"npm package missing", "agent: gemini\n", `@google/gemini-cli`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := bumpProject(t, tt.yaml, "")
			before := readAll(t, dir)
			stdout, stderr, code := h.run(t, dir, "bump")
			if code != exitError {
				t.Fatalf("exit %d, want 1; stderr %s", code, stderr)
			}
			if !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 2 {
				t.Errorf("stderr should name %q in a line or two:\n%s", tt.want, stderr)
			}
			if stdout != "" || !sameTree(before, readAll(t, dir)) {
				t.Errorf("a failed bump printed %q or changed files", stdout)
			}
		})
	}
	t.Run("mount source leads outside", func(t *testing.T) {
		dir := bumpProject(t, "agent: claude\n", "")
		os.RemoveAll(filepath.Join(dir, ".git"))
		if err := os.Symlink("/etc", filepath.Join(dir, ".git")); err != nil {
			t.Fatal(err)
		}
		before := readAll(t, dir)
		_, stderr, code := h.run(t, dir, "bump")
		if code != exitError || !strings.Contains(stderr, `.git" is a symbolic link to "/etc"`) {
			t.Errorf("exit %d, stderr %s", code, stderr)
		}
		if !sameTree(before, readAll(t, dir)) {
			t.Error("files changed")
		}
	})
	t.Run("generated directory is a link", func(t *testing.T) {
		dir := bumpProject(t, "agent: claude\n", "")
		outside := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, ".agentbox"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, ".agentbox/egress")); err != nil {
			t.Fatal(err)
		}
		before, beforeOutside := readAll(t, dir), readAll(t, outside)
		_, stderr, code := h.run(t, dir, "bump")
		if code != exitError || !strings.Contains(stderr, ".agentbox/egress is a symbolic link") {
			t.Errorf("exit %d, stderr %s", code, stderr)
		}
		if !sameTree(before, readAll(t, dir)) || !sameTree(beforeOutside, readAll(t, outside)) {
			t.Error("files changed")
		}
	})
	t.Run("foreign file in .agentbox", func(t *testing.T) {
		dir := bumpProject(t, "agent: claude\n", "")
		writeFile(t, filepath.Join(dir, ".agentbox/.env"), []byte("X=1\n"))
		before := readAll(t, dir)
		_, stderr, code := h.run(t, dir, "bump")
		if code != exitError || !strings.Contains(stderr, ".agentbox/.env: not generated by agentbox") {
			t.Errorf("exit %d, stderr %s", code, stderr)
		}
		if !sameTree(before, readAll(t, dir)) {
			t.Error("files changed")
		}
	})
	t.Run("a directory where a generated file goes", func(t *testing.T) {
		// Everything resolves and renders; writing devcontainer.json fails,
		// so neither the lock nor any other file may change.
		dir := bumpProject(t, "agent: claude\n", "")
		if err := os.MkdirAll(filepath.Join(dir, ".devcontainer/devcontainer.json"), 0o755); err != nil {
			t.Fatal(err)
		}
		before := readAll(t, dir)
		_, stderr, code := h.run(t, dir, "bump")
		if code != exitError || !strings.Contains(stderr, ".devcontainer/devcontainer.json") {
			t.Errorf("exit %d, stderr %s", code, stderr)
		}
		if !sameTree(before, readAll(t, dir)) {
			t.Errorf("files changed:\n%s", treeDiff(before, readAll(t, dir)))
		}
	})
	t.Run("registry down", func(t *testing.T) {
		dir := bumpProject(t, "agent: claude\n", "")
		h.registry.Store(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}))
		before := readAll(t, dir)
		_, stderr, code := h.run(t, dir, "bump")
		if code != exitError || !strings.Contains(stderr, "node:24-bookworm-slim") {
			t.Errorf("exit %d, stderr %s", code, stderr)
		}
		if !sameTree(before, readAll(t, dir)) {
			t.Error("files changed")
		}
	})
}

func TestBumpKeepsConfigPins(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	d := h.push("debian:bookworm-slim", "debian-1", true)
	dir := bumpProject(t, "agent: none\nimage: {base: \"debian:bookworm-slim@"+d+"\"}\negress: {image: \"debian:bookworm-slim@"+d+"\"}\n", "")
	stdout, stderr, code := h.run(t, dir, "bump", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res bump.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Images) != 1 || !res.Images[0].InConfig || !res.Changed {
		t.Errorf("result %+v (%v)", res, err)
	}
}

// TestBumpCanceled: a canceled context (Ctrl-C: main's signal.NotifyContext)
// stops a bump whose registry does not answer, promptly, with an error that
// says so, and nothing is written.
func TestBumpCanceled(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	asked := make(chan struct{}, 1)
	h.registry.Store(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done() // hangs until the client gives up
	}))
	dir := bumpProject(t, "agent: claude\n", "")
	before := readAll(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-asked
		cancel()
	}()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(ctx, h.deps(), []string{"bump", "-C", dir}, &stdout, &stderr)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("bump took %v after the cancel", took)
	}
	if code != exitError || stdout.Len() != 0 ||
		stderr.String() != "agentbox: bump interrupted (context canceled); nothing was written\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if !sameTree(before, readAll(t, dir)) {
		t.Error("a canceled bump changed files")
	}
}

// TestBumpDebianDrift: bump --check reports a newer Debian package, and a
// newer dependency of one, like a moved digest (exit 3, nothing written);
// a new snapshot with the same versions is no change, and the lock keeps
// its snapshot.
func TestBumpDebianDrift(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.push("node:24-bookworm-slim", "node-1", true)
	h.push("debian:bookworm-slim", "debian-1", true)
	h.debian.Deps = map[string]string{"libc6": "2.36-9+deb12u9"}
	dir := bumpProject(t, "agent: claude\nimage: {packages: [jq]}\n", "")
	if _, stderr, code := h.run(t, dir, "bump"); code != exitOK {
		t.Fatalf("bump: %d %s", code, stderr)
	}
	lock := readFile(t, filepath.Join(dir, "agentbox.lock"))
	for _, want := range []string{`snapshot: "20261101T000000Z"`, `"jq": "1.6-2.1"`, `"nftables": "1.0.6-2+deb12u2"`, `"arm64":`} {
		if !strings.Contains(lock, want) {
			t.Fatalf("the lock lacks %s:\n%s", want, lock)
		}
	}
	df := readFile(t, filepath.Join(dir, ".agentbox/agent.Dockerfile"))
	if !strings.Contains(df, "jq=1.6-2.1") || !strings.Contains(df, "/debian/%s %s main") {
		t.Fatalf("the agent Dockerfile does not install the pins from the snapshot:\n%s", df)
	}

	// A later snapshot, the same versions: nothing to do.
	h.debian.State = debian.Snapshot{Debian: "20261102T000000Z", Security: "20261102T060000Z"}
	if stdout, stderr, code := h.run(t, dir, "bump", "--check"); code != exitOK || stdout != "" {
		t.Fatalf("bump --check with an unchanged archive: exit %d %q %s", code, stdout, stderr)
	}

	for _, tc := range []struct {
		name, want string
		move       func()
	}{
		{"a package", `bookworm/amd64 jq\s+1\.6-2\.1\s+1\.7\.1-3\n`, func() { h.debian.Versions["jq"] = "1.7.1-3" }},
		{"a dependency", `bookworm/arm64 \(dependencies\)\s+sha256:`, func() { h.debian.Deps["libc6"] = "2.36-9+deb12u10" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.move()
			before := readAll(t, dir)
			stdout, stderr, code := h.run(t, dir, "bump", "--check")
			if code != exitDrift || !regexp.MustCompile(tc.want).MatchString(stdout) {
				t.Fatalf("bump --check: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
			}
			if !sameTree(before, readAll(t, dir)) {
				t.Error("bump --check wrote files")
			}
			if _, stderr, code := h.run(t, dir, "bump"); code != exitOK {
				t.Fatalf("bump: %d %s", code, stderr)
			}
			if lock := readFile(t, filepath.Join(dir, "agentbox.lock")); !strings.Contains(lock, `snapshot: "20261102T000000Z"`) {
				t.Errorf("the lock does not pin the new snapshot:\n%s", lock)
			}
		})
	}
}

// TestBumpRefusesNonDebian: an image that is not Debian cannot have its
// packages pinned; bump says so and writes nothing.
func TestBumpRefusesNonDebian(t *testing.T) {
	t.Parallel()
	h := newFakeHub(t)
	h.push("node:24-bookworm-slim", "node-1", true)
	h.push("debian:bookworm-slim", "debian-1", true)
	h.osRelease = "ID=alpine\nVERSION_ID=3.20\n"
	h.push("ghcr.io/acme/alpine:1", "alpine-1", false)
	dir := bumpProject(t, "agent: claude\negress: {image: \"ghcr.io/acme/alpine:1\"}\n", "")
	before := readAll(t, dir)
	_, stderr, code := h.run(t, dir, "bump")
	if code != exitError || !strings.Contains(stderr, `is not Debian (its os-release says ID="alpine"`) {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !sameTree(before, readAll(t, dir)) {
		t.Error("files changed")
	}
}
