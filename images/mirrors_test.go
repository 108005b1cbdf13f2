package images

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// hosts is the injected RoundTripper of the mirror tests: each registry
// host it knows is a registry of its own (Docker Hub and each mirror hold
// different images); a host it does not know refuses the connection. It
// records each request as "METHOD scheme://host/path".
type hosts struct {
	t         *testing.T
	regs      map[string]*httptest.Server
	plainHTTP map[string]bool // hosts that fail https, like a plain-HTTP mirror
	inner     http.RoundTripper

	mu   sync.Mutex
	reqs []string
}

func newHosts(t *testing.T, names ...string) *hosts {
	h := &hosts{t: t, regs: map[string]*httptest.Server{}, inner: http.DefaultTransport.(*http.Transport).Clone()}
	for _, n := range names {
		srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(srv.Close)
		h.regs[n] = srv
	}
	return h
}

func (h *hosts) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.reqs = append(h.reqs, req.Method+" "+req.URL.Scheme+"://"+req.URL.Host+req.URL.Path)
	h.mu.Unlock()
	srv, ok := h.regs[req.URL.Host]
	if req.URL.Scheme == "https" && h.plainHTTP[req.URL.Host] {
		return nil, tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}
	}
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	out := req.Clone(req.Context())
	out.URL.Scheme = "http"
	out.URL.Host = srv.Listener.Addr().String()
	resp, err := h.inner.RoundTrip(out)
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

func (h *hosts) log() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.reqs, "\n")
}

// asked returns the hosts asked, in order, without repeats in a row.
func (h *hosts) asked() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.reqs {
		_, rest, _ := strings.Cut(r, "://")
		host, _, _ := strings.Cut(rest, "/")
		if len(out) == 0 || out[len(out)-1] != host {
			out = append(out, host)
		}
	}
	return out
}

// put writes img at repo:tag on the registry host.
func (h *hosts) put(host, repoTag string, img v1.Image) string {
	h.t.Helper()
	srv := h.regs[host]
	tag, err := name.NewTag(srv.Listener.Addr().String()+"/"+repoTag, name.Insecure)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		h.t.Fatal(err)
	}
	return digestOf(h.t, img)
}

func (h *hosts) resolver(mirrors ...string) *RegistryResolver {
	return NewRegistryResolver(RegistryOptions{Transport: h, Keychain: authn.NewMultiKeychain(), Attempts: 1, Mirrors: mirrors})
}

func randomImage(t *testing.T) v1.Image {
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestResolveThroughMirrorsInOrder(t *testing.T) {
	const hub = "index.docker.io"
	tests := []struct {
		name   string
		has    []string // the hosts that hold library/debian:bookworm-slim (each a different image)
		want   string   // the host whose digest comes back
		asked  []string // the hosts asked, in order
		errHas []string // for a failure: parts of the error
	}{
		{name: "first mirror has it", has: []string{"m1.test:5000", "m2.test", hub}, want: "m1.test:5000", asked: []string{"m1.test:5000"}},
		{name: "first lacks it", has: []string{"m2.test", hub}, want: "m2.test", asked: []string{"m1.test:5000", "m2.test"}},
		{name: "mirrors lack it", has: []string{hub}, want: hub, asked: []string{"m1.test:5000", "m2.test", hub}},
		{name: "first mirror down", has: []string{"m2.test", hub}, want: "m2.test", asked: []string{"down.test", "m2.test"}},
		{name: "nowhere", has: nil, asked: []string{"m1.test:5000", "m2.test", hub},
			errHas: []string{`resolving "debian:bookworm-slim" on index.docker.io: repository "library/debian" not found`,
				`(registry mirrors tried first: m1.test:5000: repository "library/debian" not found; m2.test: repository`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHosts(t, "m1.test:5000", "m2.test", hub)
			digests := map[string]string{}
			for _, host := range tt.has {
				digests[host] = h.put(host, "library/debian:bookworm-slim", randomImage(t))
			}
			mirrors := []string{"http://m1.test:5000", "https://m2.test/"}
			if tt.name == "first mirror down" {
				mirrors[0] = "http://down.test"
			}
			got, err := h.resolver(mirrors...).Resolve(context.Background(), mustRef(t, "debian:bookworm-slim"))
			if tt.errHas != nil {
				if err == nil {
					t.Fatalf("resolved to %s, want an error", got)
				}
				for _, part := range tt.errHas {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q lacks %q", err, part)
					}
				}
			} else if err != nil || got != digests[tt.want] {
				t.Errorf("resolved to %s (%v), want %s's %s", got, err, tt.want, digests[tt.want])
			}
			if a := h.asked(); strings.Join(a, " ") != strings.Join(tt.asked, " ") {
				t.Errorf("asked %q, want %q; requests:\n%s", a, tt.asked, h.log())
			}
		})
	}
}

func TestResolveMirrorSchemes(t *testing.T) {
	h := newHosts(t, "m1.test", "m2.test:443")
	h.plainHTTP = map[string]bool{"m1.test": true}
	want := h.put("m1.test", "library/node:24", randomImage(t))
	got, err := h.resolver("http://m1.test").Resolve(context.Background(), mustRef(t, "docker.io/library/node:24"))
	if err != nil || got != want {
		t.Fatalf("resolved to %s (%v), want %s", got, err, want)
	}
	if !strings.Contains(h.log(), "HEAD http://m1.test/v2/library/node/manifests/24") {
		t.Errorf("an http:// mirror on a name that is not loopback is reached in plain HTTP; requests:\n%s", h.log())
	}
	// https:// means TLS: a mirror that does not speak it fails over to Hub.
	h.plainHTTP["m2.test:443"] = true
	if _, err := h.resolver("https://m2.test:443").Resolve(context.Background(), mustRef(t, "docker.io/library/node:24")); err == nil ||
		strings.Contains(h.log(), "http://m2.test") {
		t.Errorf("an https:// mirror was spoken to in plain HTTP (%v):\n%s", err, h.log())
	}
}

func TestResolveMirrorsOnlyForDockerHub(t *testing.T) {
	h := newHosts(t, "m1.test", "ghcr.io")
	h.put("m1.test", "o/r:v1", randomImage(t))
	want := h.put("ghcr.io", "o/r:v1", randomImage(t))
	got, err := h.resolver("http://m1.test").Resolve(context.Background(), mustRef(t, "ghcr.io/o/r:v1"))
	if err != nil || got != want {
		t.Fatalf("resolved to %s (%v), want ghcr.io's %s", got, err, want)
	}
	if a := h.asked(); len(a) != 1 || a[0] != "ghcr.io" {
		t.Errorf("asked %q, want ghcr.io alone", a)
	}
}

func TestResolvePinnedDigestThroughMirror(t *testing.T) {
	h := newHosts(t, "m1.test", "index.docker.io")
	d := h.put("m1.test", "library/debian:bookworm-slim", randomImage(t))
	got, err := h.resolver("http://m1.test").Resolve(context.Background(), mustRef(t, "debian:bookworm-slim@"+d))
	if err != nil || got != d {
		t.Fatalf("resolved to %s (%v), want %s", got, err, d)
	}
	if strings.Contains(h.log(), "index.docker.io") {
		t.Errorf("Docker Hub was asked although the mirror had the digest:\n%s", h.log())
	}
}

func TestOSReleaseThroughMirror(t *testing.T) {
	h := newHosts(t, "m1.test", "index.docker.io")
	img := imageOf(t, "amd64", debianBase(t))
	d := h.put("m1.test", "library/debian:bookworm-slim", img)
	got, err := h.resolver("http://m1.test").OSRelease(context.Background(), mustRef(t, "debian:bookworm-slim"), d)
	if err != nil || got != bookwormRelease {
		t.Fatalf("OSRelease = %+v (%v), want %+v", got, err, bookwormRelease)
	}
	if strings.Contains(h.log(), "index.docker.io") {
		t.Errorf("Docker Hub was asked although the mirror had the image:\n%s", h.log())
	}
	_, err = h.resolver("http://down.test").OSRelease(context.Background(), mustRef(t, "debian:bookworm-slim"), d)
	if err == nil || !strings.Contains(err.Error(), "registry mirrors tried first: down.test: ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("OSRelease with the mirror down and Hub lacking the image: %v", err)
	}
}

func TestParseMirror(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:5000":   "http://127.0.0.1:5000",
		"https://mirror.test/":    "https://mirror.test",
		" https://m.test:8443/  ": "https://m.test:8443",
		"mirror.test":             "",
		"ftp://mirror.test":       "",
		"https://mirror.test/v2":  "",
		"https://u:p@mirror.test": "",
		"https://mirror.test/?a":  "",
	} {
		got, err := ParseMirror(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("ParseMirror(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	r := NewRegistryResolver(RegistryOptions{Mirrors: []string{"https://mirror.test/v2"}})
	if _, err := r.Resolve(context.Background(), mustRef(t, "debian:x")); err == nil || !strings.Contains(err.Error(), "scheme://host[:port]") {
		t.Errorf("a resolver with a bad mirror: %v", err)
	}
}
