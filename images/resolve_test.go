package images

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/neterr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// rewrite is the injected RoundTripper: it sends every request to one test
// server whatever registry the reference names, so references can name
// index.docker.io or ghcr.io while all traffic stays on loopback. It records
// each request as "METHOD scheme://host/path" with the host as named.
type rewrite struct {
	target    string          // host:port of the test server
	plainHTTP map[string]bool // registries that fail https, like a local plain-HTTP registry
	inner     http.RoundTripper

	mu   sync.Mutex
	reqs []string
}

func (t *rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.reqs = append(t.reqs, req.Method+" "+req.URL.Scheme+"://"+req.URL.Host+req.URL.Path)
	t.mu.Unlock()
	if req.URL.Scheme == "https" && t.plainHTTP[req.URL.Host] {
		return nil, tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}
	}
	out := req.Clone(req.Context())
	out.URL.Scheme = "http"
	out.URL.Host = t.target
	out.Host = req.URL.Host
	resp, err := t.inner.RoundTrip(out)
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

// count returns how many recorded requests contain all of parts.
func (t *rewrite) count(parts ...string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
next:
	for _, r := range t.reqs {
		for _, p := range parts {
			if !strings.Contains(r, p) {
				continue next
			}
		}
		n++
	}
	return n
}

func (t *rewrite) log() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.reqs, "\n")
}

// fixture is an in-process registry served twice: as is, for pushing test
// images, and behind wrap, for the resolver under test. The resolver's
// requests go through a clone of http.DefaultTransport, as in production.
type fixture struct {
	t     testing.TB
	push  *rewrite
	rt    *rewrite
	conns atomic.Int64 // connections the resolver opened
}

func newFixture(t testing.TB, wrap func(http.Handler) http.Handler) *fixture {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	pushSrv := httptest.NewServer(reg)
	t.Cleanup(pushSrv.Close)
	var h http.Handler = reg
	if wrap != nil {
		h = wrap(reg)
	}
	f := &fixture{t: t}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	inner := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(inner.CloseIdleConnections)
	f.push = &rewrite{target: pushSrv.Listener.Addr().String(), inner: pushSrv.Client().Transport}
	f.rt = &rewrite{target: srv.Listener.Addr().String(), inner: inner}
	return f
}

func (f *fixture) image(ref string) v1.Image {
	f.t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		f.t.Fatal(err)
	}
	f.write(ref, img)
	return img
}

func (f *fixture) write(ref string, img v1.Image) {
	f.t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithTransport(f.push)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) index(ref string) v1.ImageIndex {
	f.t.Helper()
	idx, err := random.Index(256, 1, 3)
	if err != nil {
		f.t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithTransport(f.push)); err != nil {
		f.t.Fatal(err)
	}
	return idx
}

// resolver returns a resolver that reaches the fixture only, with no
// credentials from the environment.
func (f *fixture) resolver(o RegistryOptions) *RegistryResolver {
	o.Transport = f.rt
	if o.Keychain == nil {
		o.Keychain = authn.NewMultiKeychain()
	}
	return NewRegistryResolver(o)
}

func mustRef(t *testing.T, s string) Ref {
	t.Helper()
	r, err := ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func digestOf(t *testing.T, d interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func resolve(t *testing.T, r Resolver, ref string) (string, error) {
	t.Helper()
	return r.Resolve(context.Background(), mustRef(t, ref))
}

// checkErr checks that err is one lowercase line naming the reference and
// the registry host and containing want.
func checkErr(t *testing.T, err error, ref, host, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("resolving %s: no error, want %q", ref, want)
	}
	msg := err.Error()
	t.Logf("error: %s", msg)
	if !strings.Contains(msg, want) || !strings.Contains(msg, fmt.Sprintf("%q", ref)) || !strings.Contains(msg, host) ||
		strings.Contains(msg, "\n") || strings.ToLower(msg[:1]) != msg[:1] {
		t.Errorf("error %q: want one lowercase line naming %q and %s and containing %q", msg, ref, host, want)
	}
}

func TestResolveImageOnDockerHub(t *testing.T) {
	f := newFixture(t, nil)
	img := f.image("index.docker.io/library/debian:bookworm-slim")
	got, err := resolve(t, f.resolver(RegistryOptions{}), "debian:bookworm-slim")
	if err != nil {
		t.Fatal(err)
	}
	if want := digestOf(t, img); got != want {
		t.Errorf("digest = %s, want %s", got, want)
	}
	if n := f.rt.count("HEAD https://index.docker.io/v2/library/debian/manifests/bookworm-slim"); n != 1 {
		t.Errorf("%d HEADs of the short name on index.docker.io, want 1; requests:\n%s", n, f.rt.log())
	}
	if n := f.rt.count("GET", "/manifests/"); n != 0 {
		t.Errorf("%d manifest GETs, want 0 (HEAD costs no pull quota)", n)
	}
}

func TestResolveIndexDigest(t *testing.T) {
	f := newFixture(t, nil)
	idx := f.index("ghcr.io/o/r:v1")
	got, err := resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/r:v1")
	if err != nil {
		t.Fatal(err)
	}
	if want := digestOf(t, idx); got != want {
		t.Errorf("digest = %s, want the index digest %s", got, want)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		if m.Digest.String() == got {
			t.Errorf("resolved to the platform manifest %s, not the index", got)
		}
	}
}

func TestResolvePlainHTTPRegistryWithPort(t *testing.T) {
	f := newFixture(t, nil)
	f.rt.plainHTTP = map[string]bool{"127.0.0.1:5000": true}
	img := f.image("127.0.0.1:5000/x:1")
	got, err := resolve(t, f.resolver(RegistryOptions{}), "127.0.0.1:5000/x:1")
	if err != nil {
		t.Fatal(err)
	}
	if want := digestOf(t, img); got != want {
		t.Errorf("digest = %s, want %s", got, want)
	}
	if n := f.rt.count("HEAD http://127.0.0.1:5000/v2/x/manifests/1"); n != 1 {
		t.Errorf("want one plain-HTTP HEAD; requests:\n%s", f.rt.log())
	}
}

func TestResolveTagMoved(t *testing.T) {
	f := newFixture(t, nil)
	first := f.image("ghcr.io/o/moving:latest")
	d1, err := resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/moving:latest")
	if err != nil {
		t.Fatal(err)
	}
	second := f.image("ghcr.io/o/moving:latest")
	d2, err := resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/moving:latest")
	if err != nil {
		t.Fatal(err)
	}
	if d1 != digestOf(t, first) || d2 != digestOf(t, second) || d1 == d2 {
		t.Errorf("digests %s then %s, want %s then %s", d1, d2, digestOf(t, first), digestOf(t, second))
	}
}

func TestResolveDigestReference(t *testing.T) {
	f := newFixture(t, nil)
	img := f.image("ghcr.io/o/r:v1")
	want := digestOf(t, img)
	r := f.resolver(RegistryOptions{})
	got, err := resolve(t, r, "ghcr.io/o/r:v1@"+want)
	if err != nil || got != want {
		t.Errorf("Resolve = %q, %v; want %s", got, err, want)
	}
	_, err = resolve(t, r, "ghcr.io/o/r:v1@"+fakeDigest)
	checkErr(t, err, "ghcr.io/o/r:v1@"+fakeDigest, "ghcr.io", "digest "+fakeDigest+" not found")
}

func TestResolveNotFound(t *testing.T) {
	f := newFixture(t, nil)
	f.image("index.docker.io/library/debian:bookworm-slim")
	r := f.resolver(RegistryOptions{})
	_, err := resolve(t, r, "debian:nope")
	checkErr(t, err, "debian:nope", "index.docker.io", `tag "nope" not found in repository "library/debian"`)
	_, err = resolve(t, r, "ghcr.io/o/missing:1")
	checkErr(t, err, "ghcr.io/o/missing:1", "ghcr.io", `repository "o/missing" not found`)
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusNotFound {
		t.Errorf("errors.As(*transport.Error) = %v, want status 404", terr)
	}
}

// onManifests wraps a registry so that fault answers the manifest requests
// it wants to; the ping and everything else reach the registry.
func onManifests(fault func(w http.ResponseWriter, r *http.Request) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/manifests/") && fault(w, r) {
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestResolveRetriesServerErrors(t *testing.T) {
	f := newFixture(t, onManifests(func(w http.ResponseWriter, r *http.Request) bool {
		http.Error(w, `{"errors":[{"code":"UNKNOWN","message":"boom\nsecond line"}]}`, http.StatusInternalServerError)
		return true
	}))
	start := time.Now()
	_, err := resolve(t, f.resolver(RegistryOptions{Attempts: 3}), "ghcr.io/o/r:v1")
	elapsed := time.Since(start)
	checkErr(t, err, "ghcr.io/o/r:v1", "ghcr.io", "registry unavailable (http 500 internal server error) after 3 attempts")
	if n := f.rt.count("HEAD", "/manifests/"); n != 3 {
		t.Errorf("%d HEADs, want 3 attempts; requests:\n%s", n, f.rt.log())
	}
	if n := f.rt.count("GET", "/manifests/"); n != 0 {
		t.Errorf("%d GETs after a 500, want none", n)
	}
	if elapsed < 300*time.Millisecond { // backoff 100 ms, then 200 ms
		t.Errorf("3 attempts took %s, want at least 300ms of backoff", elapsed)
	}
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != 500 {
		t.Errorf("errors.As(*transport.Error) = %v, want status 500", terr)
	}
}

func TestResolveRegistryDown(t *testing.T) {
	f := newFixture(t, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		})
	})
	_, err := resolve(t, f.resolver(RegistryOptions{Attempts: 2}), "ghcr.io/o/r:v1")
	checkErr(t, err, "ghcr.io/o/r:v1", "ghcr.io", "registry unavailable (http 503 service unavailable) after 2 attempts")
	if n := f.rt.count("GET https://ghcr.io/v2/"); n != 2 {
		t.Errorf("%d pings, want 2 attempts; requests:\n%s", n, f.rt.log())
	}
}

// failing is a RoundTripper whose every request fails with err.
type failing struct {
	err error
	n   atomic.Int32
}

func (f *failing) RoundTrip(*http.Request) (*http.Response, error) {
	f.n.Add(1)
	return nil, f.err
}

func TestResolveNetworkErrors(t *testing.T) {
	cases := []struct {
		err      error
		attempts int32
		want     string
	}{
		{&net.DNSError{Err: "no such host", Name: "ghcr.io", IsNotFound: true}, 1, `cannot resolve host "ghcr.io"`},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, 2, "connection closed by the registry after 2 attempts"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, 1, "cannot connect: host unreachable"},
		{x509.UnknownAuthorityError{}, 1, "tls certificate not trusted"},
	}
	for _, c := range cases {
		rt := &failing{err: c.err}
		r := NewRegistryResolver(RegistryOptions{Transport: rt, Keychain: authn.NewMultiKeychain(), Attempts: 2})
		_, err := resolve(t, r, "ghcr.io/o/r:v1")
		checkErr(t, err, "ghcr.io/o/r:v1", "ghcr.io", c.want)
		if !errors.Is(err, c.err) {
			t.Errorf("%v does not wrap %v", err, c.err)
		}
		if n := rt.n.Load(); n != c.attempts {
			t.Errorf("%s: %d attempts, want %d", c.want, n, c.attempts)
		}
	}
}

func TestResolveRetriesTooManyRequests(t *testing.T) {
	var heads atomic.Int32
	f := newFixture(t, onManifests(func(w http.ResponseWriter, r *http.Request) bool {
		if heads.Add(1) == 1 {
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	}))
	img := f.image("ghcr.io/o/r:v1")
	got, err := resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/r:v1")
	if err != nil || got != digestOf(t, img) {
		t.Errorf("Resolve = %q, %v; want %s", got, err, digestOf(t, img))
	}
	if n := f.rt.count("HEAD", "/manifests/"); n != 2 {
		t.Errorf("%d HEADs, want 2 (429, then success)", n)
	}

	// Still limited after every attempt.
	f = newFixture(t, onManifests(func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}))
	_, err = resolve(t, f.resolver(RegistryOptions{Attempts: 2}), "ghcr.io/o/r:v1")
	checkErr(t, err, "ghcr.io/o/r:v1", "ghcr.io", "rate limited (http 429 too many requests) after 2 attempts; try again later")
}

func TestResolveRetriesDroppedConnections(t *testing.T) {
	var heads atomic.Int32
	f := newFixture(t, onManifests(func(w http.ResponseWriter, r *http.Request) bool {
		if heads.Add(1) > 2 {
			return false
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return true
		}
		conn.Close()
		return true
	}))
	img := f.image("ghcr.io/o/r:v1")
	got, err := resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/r:v1")
	if err != nil || got != digestOf(t, img) {
		t.Errorf("Resolve = %q, %v; want %s", got, err, digestOf(t, img))
	}
	t.Logf("server saw %d HEADs, the resolver sent %d", heads.Load(), f.rt.count("HEAD"))
	if n := f.rt.count("HEAD"); n < 2 {
		t.Errorf("the resolver sent %d HEADs, want a retry after the dropped connection", n)
	}
}

func TestResolveAuthenticationRefused(t *testing.T) {
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		f := newFixture(t, func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(code)
			})
		})
		_, err := resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/private:v1")
		checkErr(t, err, "ghcr.io/o/private:v1", "ghcr.io", fmt.Sprintf("authentication refused (%s)", neterr.Status(code)))
		// 401 answers the ping with a challenge, then the HEAD; 403 stops
		// at the ping. Either way nothing is asked twice.
		seen := map[string]bool{}
		for _, r := range strings.Split(f.rt.log(), "\n") {
			if seen[r] {
				t.Errorf("%d: %s retried; requests:\n%s", code, r, f.rt.log())
			}
			seen[r] = true
		}
	}
}

func TestResolveUsesKeychain(t *testing.T) {
	f := newFixture(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "me" || p != "secret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	img := f.image("ghcr.io/o/private:v1")
	kc := staticKeychain{"ghcr.io": authn.FromConfig(authn.AuthConfig{Username: "me", Password: "secret"})}
	got, err := resolve(t, f.resolver(RegistryOptions{Keychain: kc}), "ghcr.io/o/private:v1")
	if err != nil || got != digestOf(t, img) {
		t.Errorf("Resolve = %q, %v; want %s", got, err, digestOf(t, img))
	}
}

// tokenAuth puts a registry behind Docker-style token authentication: the
// token endpoint on the registry's own host trades the Basic credentials
// user:pass (or none when user is "") for a bearer token.
func tokenAuth(host, user, pass string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/token" {
				if u, p, _ := r.BasicAuth(); u != user || p != pass {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				fmt.Fprintf(w, `{"token":"t0k3n","expires_in":300}`)
				return
			}
			if r.Header.Get("Authorization") != "Bearer t0k3n" {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="https://%s/token",service="%s"`, host, host))
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestResolveWithTokenAuth(t *testing.T) {
	f := newFixture(t, tokenAuth("ghcr.io", "me", "secret"))
	img := f.image("ghcr.io/o/private:v1")
	kc := staticKeychain{"ghcr.io": authn.FromConfig(authn.AuthConfig{Username: "me", Password: "secret"})}
	got, err := resolve(t, f.resolver(RegistryOptions{Keychain: kc}), "ghcr.io/o/private:v1")
	if err != nil || got != digestOf(t, img) {
		t.Errorf("Resolve = %q, %v; want %s", got, err, digestOf(t, img))
	}
	if n := f.rt.count("GET https://ghcr.io/token"); n != 1 {
		t.Errorf("%d token requests, want 1; requests:\n%s", n, f.rt.log())
	}

	_, err = resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/private:v1")
	checkErr(t, err, "ghcr.io/o/private:v1", "ghcr.io", "authentication refused (http 401 unauthorized)")
}

type staticKeychain map[string]authn.Authenticator

func (k staticKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if a, ok := k[r.RegistryStr()]; ok {
		return a, nil
	}
	return authn.Anonymous, nil
}

func TestResolveTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFixture(t, onManifests(func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	}))
	defer close(release)
	start := time.Now()
	_, err := resolve(t, f.resolver(RegistryOptions{Timeout: 200 * time.Millisecond}), "ghcr.io/o/r:v1")
	elapsed := time.Since(start)
	checkErr(t, err, "ghcr.io/o/r:v1", "ghcr.io", "timed out after 200ms")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, context.DeadlineExceeded) = false for %v", err)
	}
	if elapsed > 2*time.Second {
		t.Errorf("a 200ms timeout took %s", elapsed)
	}
}

func TestResolveHeadFallsBackToGet(t *testing.T) {
	// Each fault answers a manifest HEAD: with the registry's answer minus
	// its Docker-Content-Digest, or with 405.
	faults := map[string]func(next http.Handler, w http.ResponseWriter, r *http.Request){
		"no Docker-Content-Digest": func(next http.Handler, w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(dropDigest{w}, r)
		},
		"405": func(next http.Handler, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusMethodNotAllowed)
		},
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if strings.Contains(r.URL.Path, "/manifests/") && r.Method == http.MethodHead {
						fault(next, w, r)
						return
					}
					next.ServeHTTP(w, r)
				})
			})
			idx := f.index("ghcr.io/o/r:v1")
			got, err := resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/r:v1")
			if err != nil || got != digestOf(t, idx) {
				t.Errorf("Resolve = %q, %v; want %s", got, err, digestOf(t, idx))
			}
			if n := f.rt.count("GET", "/manifests/"); n != 1 {
				t.Errorf("%d GETs, want 1 fallback; requests:\n%s", n, f.rt.log())
			}
		})
	}
}

// dropDigest removes Docker-Content-Digest from a response.
type dropDigest struct{ http.ResponseWriter }

func (d dropDigest) WriteHeader(code int) {
	d.Header().Del("Docker-Content-Digest")
	d.ResponseWriter.WriteHeader(code)
}

func TestResolveMalformedResponse(t *testing.T) {
	f := newFixture(t, onManifests(func(w http.ResponseWriter, r *http.Request) bool {
		body := "<html>welcome to our registry</html>"
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			return true
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, body)
		return true
	}))
	_, err := resolve(t, f.resolver(RegistryOptions{}), "ghcr.io/o/r:v1")
	checkErr(t, err, "ghcr.io/o/r:v1", "ghcr.io", "malformed response")
	if !errors.Is(err, errMalformed) {
		t.Errorf("errors.Is(err, errMalformed) = false")
	}
}

func TestResolveNotARegistry(t *testing.T) {
	f := newFixture(t, func(http.Handler) http.Handler { return http.NotFoundHandler() })
	_, err := resolve(t, f.resolver(RegistryOptions{}), "example.com/o/r:v1")
	checkErr(t, err, "example.com/o/r:v1", "example.com", "not a container registry")
}

func TestResolveConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rt := &rewrite{target: addr, inner: http.DefaultTransport.(*http.Transport).Clone()}
	r := NewRegistryResolver(RegistryOptions{Transport: rt, Keychain: authn.NewMultiKeychain()})
	_, err = resolve(t, r, "ghcr.io/o/r:v1")
	checkErr(t, err, "ghcr.io/o/r:v1", "ghcr.io", "cannot connect: connection refused")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("errors.Is(err, ECONNREFUSED) = false for %v", err)
	}
	if n := rt.count(""); n != 1 {
		t.Errorf("%d requests, want 1 (a refused connection is not retried)", n)
	}
}

func TestResolveAll(t *testing.T) {
	f := newFixture(t, nil)
	var refs []Ref
	want := map[string]string{}
	for i := range 9 {
		s := fmt.Sprintf("ghcr.io/o/r%d:v1", i)
		if i%3 == 0 {
			want[s] = digestOf(t, f.index(s))
		} else {
			want[s] = digestOf(t, f.image(s))
		}
		refs = append(refs, mustRef(t, s))
	}
	refs = append(refs, mustRef(t, "ghcr.io/o/r4:nope"))
	calls := map[string]int{}
	var inCall atomic.Int32
	got, errs := ResolveAll(context.Background(), f.resolver(RegistryOptions{}), refs, func(ref Ref, digest string, err error) {
		if inCall.Add(1) != 1 {
			t.Error("progress called concurrently")
		}
		defer inCall.Add(-1)
		calls[ref.String()]++
		if (err == nil) != ValidDigest(digest) {
			t.Errorf("progress(%s, %q, %v): want a digest or an error", ref, digest, err)
		}
	})
	if len(got) != 9 {
		t.Errorf("%d digests, want 9: %v", len(got), got)
	}
	for k, d := range want {
		if got[k] != d {
			t.Errorf("%s = %s, want %s", k, got[k], d)
		}
	}
	if len(errs) != 1 {
		t.Fatalf("errors %v, want 1", errs)
	}
	checkErr(t, errs[0], "ghcr.io/o/r4:nope", "ghcr.io", `tag "nope" not found`)
	for _, r := range refs {
		if calls[r.String()] != 1 {
			t.Errorf("progress called %d times for %s, want 1", calls[r.String()], r)
		}
	}
}

func TestResolveAllSharesOneTransportPerRepository(t *testing.T) {
	f := newFixture(t, nil)
	var refs []Ref
	for i := range 5 {
		s := fmt.Sprintf("ghcr.io/o/same:v%d", i)
		f.image(s)
		refs = append(refs, mustRef(t, s))
	}
	_, errs := ResolveAll(context.Background(), f.resolver(RegistryOptions{}), refs, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	if n := f.rt.count("GET https://ghcr.io/v2/"); n != 1 {
		t.Errorf("%d pings for 5 tags of one repository, want 1; requests:\n%s", n, f.rt.log())
	}
	if n := f.rt.count("HEAD"); n != 5 {
		t.Errorf("%d HEADs, want 5", n)
	}
}

// fakeResolver answers from a map and fails loudly on other references; it
// waits until every expected call has started, so ResolveAll must run them
// all at once.
type fakeResolver struct {
	digests map[string]string
	all     sync.WaitGroup
}

func (f *fakeResolver) Resolve(ctx context.Context, ref Ref) (string, error) {
	f.all.Done()
	f.all.Wait()
	if d, ok := f.digests[ref.String()]; ok {
		return d, nil
	}
	return "", fmt.Errorf("resolving %q: not in the fake", ref.String())
}

func TestResolveAllConcurrentSortedDeduplicated(t *testing.T) {
	fake := &fakeResolver{digests: map[string]string{"b:1": fakeDigest}}
	fake.all.Add(4)
	refs := []Ref{mustRef(t, "z:1"), mustRef(t, "b:1"), mustRef(t, "c:1"), mustRef(t, "a:1"), mustRef(t, "z:1")}
	done := make(chan struct{})
	var got map[string]string
	var errs []error
	go func() {
		got, errs = ResolveAll(context.Background(), fake, refs, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ResolveAll did not start every reference at once")
	}
	if len(got) != 1 || got["b:1"] != fakeDigest {
		t.Errorf("digests = %v", got)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	want := `resolving "a:1": not in the fake|resolving "c:1": not in the fake|resolving "z:1": not in the fake`
	if strings.Join(msgs, "|") != want {
		t.Errorf("errors = %q, want %q", msgs, want)
	}
}
