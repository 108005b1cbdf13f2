package npm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// npmServer serves package documents keyed by escaped request path, and
// records every request's escaped path and Accept header.
type npmServer struct {
	mu      sync.Mutex
	docs    map[string]string // escaped path -> body
	failing map[string]int    // escaped path -> 500s to answer first
	reqs    []string
	accepts []string
}

func (s *npmServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := r.URL.EscapedPath()
	s.reqs = append(s.reqs, p)
	s.accepts = append(s.accepts, r.Header.Get("Accept"))
	if s.failing[p] > 0 {
		s.failing[p]--
		http.Error(w, "try later", http.StatusInternalServerError)
		return
	}
	body, ok := s.docs[p]
	if !ok {
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.npm.install-v1+json")
	w.Write([]byte(body))
}

func (s *npmServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.reqs {
		if r == path {
			n++
		}
	}
	return n
}

func newNPMServer(t *testing.T) (*npmServer, *httptest.Server) {
	s := &npmServer{
		docs: map[string]string{
			"/@openai%2fcodex":          `{"name":"@openai/codex","dist-tags":{"latest":"0.41.0","next":"0.42.0-alpha.1"},"versions":{}}`,
			"/opencode-ai":              `{"name":"opencode-ai","dist-tags":{"latest":"1.2.3"}}`,
			"/npm/@google%2fgemini-cli": `{"dist-tags":{"latest":"2.0.0-rc.1"}}`,
			"/flaky":                    `{"dist-tags":{"latest":"4.5.6"}}`,
			"/broken":                   `{"dist-tags":`,
			"/untagged":                 `{"name":"untagged","versions":{}}`,
			"/silly":                    `{"dist-tags":{"latest":"not a version"}}`,
			"/numeric":                  `{"dist-tags":{"latest":7}}`,
		},
		failing: map[string]int{"/flaky": 1, "/down": 100},
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func TestClientLatest(t *testing.T) {
	s, srv := newNPMServer(t)
	c := NewClient(Options{Registry: srv.URL + "/"})
	for pkg, want := range map[string]string{"@openai/codex": "0.41.0", "opencode-ai": "1.2.3", "flaky": "4.5.6"} {
		got, err := c.Latest(context.Background(), pkg)
		if err != nil || got != want {
			t.Errorf("Latest(%q) = %q, %v; want %s", pkg, got, err, want)
		}
	}
	if n := s.count("/@openai%2fcodex"); n != 1 {
		t.Errorf("scoped package: %d requests to /@openai%%2fcodex, want 1; requests: %q", n, s.reqs)
	}
	if n := s.count("/flaky"); n != 2 {
		t.Errorf("flaky: %d requests, want 2 (500, then 200)", n)
	}
	for _, a := range s.accepts {
		if a != "application/vnd.npm.install-v1+json" {
			t.Errorf("Accept = %q, want the abbreviated metadata type", a)
		}
	}
}

func TestClientRegistryWithPathPrefix(t *testing.T) {
	_, srv := newNPMServer(t)
	for _, reg := range []string{srv.URL + "/npm", srv.URL + "/npm/", srv.URL + "/npm//"} {
		got, err := NewClient(Options{Registry: reg}).Latest(context.Background(), "@google/gemini-cli")
		if err != nil || got != "2.0.0-rc.1" {
			t.Errorf("registry %s: Latest = %q, %v; want 2.0.0-rc.1", reg, got, err)
		}
	}
}

func TestClientErrors(t *testing.T) {
	s, srv := newNPMServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	c := NewClient(Options{Registry: srv.URL, Attempts: 3})
	cases := map[string]string{
		"@nobody/nothing": "package not found (http 404 not found)",
		"broken":          "malformed response: the package document is not valid json",
		"untagged":        "malformed response: the package document has no dist-tags.latest",
		"silly":           `malformed response: dist-tags.latest is "not a version", not an exact version`,
		"numeric":         "malformed response: dist-tags.latest is 7, not an exact version",
		"down":            "registry unavailable (http 500 internal server error) after 3 attempts",
		"Not/Valid":       "invalid npm package name",
	}
	for pkg, want := range cases {
		_, err := c.Latest(context.Background(), pkg)
		if err == nil {
			t.Errorf("Latest(%q): no error, want %q", pkg, want)
			continue
		}
		msg := err.Error()
		t.Logf("error: %s", msg)
		prefix := `reading npm package "` + pkg + `" from ` + host + ": "
		if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("Latest(%q) error %q, want %q", pkg, msg, prefix+want)
		}
	}
	if n := s.count("/down"); n != 3 {
		t.Errorf("down: %d requests, want 3 attempts", n)
	}
	if n := s.count("/@nobody%2fnothing"); n != 1 {
		t.Errorf("404: %d requests, want 1 (not retried)", n)
	}
	var serr *statusErr
	if _, err := c.Latest(context.Background(), "down"); !errors.As(err, &serr) || serr.code != 500 {
		t.Errorf("errors.As(statusErr) = %v for %v", serr, err)
	}
}

func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	defer close(release)
	start := time.Now()
	_, err := NewClient(Options{Registry: srv.URL, Timeout: 200 * time.Millisecond}).Latest(context.Background(), "slow")
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a 200ms timeout took %s", d)
	}
}

// TestClientDefaultRegistryAsksNPM: with no registry configured, the client
// asks npm for its default, and says so clearly when npm cannot answer.
func TestClientDefaultRegistryAsksNPM(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"dist-tags":{"latest":"1.2.3"}}`))
	}))
	defer srv.Close()
	c := &Client{client: srv.Client(), timeout: time.Second, attempts: 1,
		configGet: func(context.Context) (string, error) { return srv.URL + "/", nil }}
	if v, err := c.Latest(context.Background(), "pkg"); err != nil || v != "1.2.3" {
		t.Errorf("Latest = %q, %v", v, err)
	}

	c = &Client{client: srv.Client(), timeout: time.Second, attempts: 1,
		configGet: func(context.Context) (string, error) { return "", errors.New("npm: not found") }}
	if _, err := c.Latest(context.Background(), "pkg"); err == nil || !strings.Contains(err.Error(), "no npm registry configured") {
		t.Errorf("err = %v", err)
	}
}

// TestClientReadsNoEnvironment: an empty Registry is asked of npm, whatever
// the environment says; only the caller reads the environment
// (RegistryFromConfig with the getenv it passes).
func TestClientReadsNoEnvironment(t *testing.T) {
	_, srv := newNPMServer(t)
	t.Setenv("NPM_CONFIG_REGISTRY", "http://127.0.0.1:1/from-env")
	t.Setenv("HOME", t.TempDir())
	asked := 0
	c := NewClient(Options{ConfigGet: func(context.Context) (string, error) { asked++; return srv.URL, nil }})
	if v, err := c.Latest(context.Background(), "opencode-ai"); err != nil || v != "1.2.3" || asked != 1 {
		t.Errorf("Latest = %q, %v after asking npm %d times; want 1.2.3 from the registry npm names, asked once", v, err, asked)
	}
}

// TestClientCancelDuringBackoff: a cancel while the client waits to retry
// ends the request at once, and says so.
func TestClientCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	s, srv := newNPMServer(t)
	c := NewClient(Options{Registry: srv.URL, Attempts: 4})
	c.first = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Latest(ctx, "down")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Latest returned after %s, want soon after the cancel", d)
	}
	if err == nil || !strings.HasSuffix(err.Error(), ": canceled") || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want a cancellation", err)
	}
	if n := s.count("/down"); n != 1 {
		t.Errorf("down: %d requests, want 1 before the cancel", n)
	}
}
