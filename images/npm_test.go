package images

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

func TestNPMLatest(t *testing.T) {
	s, srv := newNPMServer(t)
	c := NewNPMClient(NPMOptions{Registry: srv.URL + "/"})
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

func TestNPMRegistryWithPathPrefix(t *testing.T) {
	_, srv := newNPMServer(t)
	for _, reg := range []string{srv.URL + "/npm", srv.URL + "/npm/", srv.URL + "/npm//"} {
		got, err := NewNPMClient(NPMOptions{Registry: reg}).Latest(context.Background(), "@google/gemini-cli")
		if err != nil || got != "2.0.0-rc.1" {
			t.Errorf("registry %s: Latest = %q, %v; want 2.0.0-rc.1", reg, got, err)
		}
	}
}

func TestNPMErrors(t *testing.T) {
	s, srv := newNPMServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	c := NewNPMClient(NPMOptions{Registry: srv.URL, Attempts: 3})
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

func TestNPMTimeout(t *testing.T) {
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
	_, err := NewNPMClient(NPMOptions{Registry: srv.URL, Timeout: 200 * time.Millisecond}).Latest(context.Background(), "slow")
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a 200ms timeout took %s", d)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNPMRegistryFromConfig(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "project")
	home := filepath.Join(root, "home")
	bare := filepath.Join(root, "bare")
	writeFile(t, filepath.Join(project, ".npmrc"), `
# a comment
; another comment
@myorg:registry=https://scoped.example/
  registry =  https://project.example/npm/   ; trailing comment
always-auth=true
`)
	writeFile(t, filepath.Join(home, ".npmrc"), "registry=\"https://home.example/\"\n")
	writeFile(t, filepath.Join(root, "custom.npmrc"), "registry=${MIRROR}/npm/\n")
	writeFile(t, filepath.Join(bare, ".npmrc"), "# registry=https://commented.example/\n[section]\nregistry=https://in-section.example/\n")
	if err := os.MkdirAll(filepath.Join(root, "none"), 0o755); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		dir  string
		env  map[string]string
		want string
	}{
		{"env beats everything", project, map[string]string{"NPM_CONFIG_REGISTRY": "https://env.example/", "HOME": home}, "https://env.example/"},
		{"lowercase env", project, map[string]string{"npm_config_registry": "https://lower.example/", "HOME": home}, "https://lower.example/"},
		{"project .npmrc beats home", project, map[string]string{"HOME": home}, "https://project.example/npm/"},
		{"home .npmrc", filepath.Join(root, "none"), map[string]string{"HOME": home}, "https://home.example/"},
		{"userconfig replaces home", filepath.Join(root, "none"), map[string]string{"HOME": home, "NPM_CONFIG_USERCONFIG": filepath.Join(root, "custom.npmrc"), "MIRROR": "http://127.0.0.1:4873"}, "http://127.0.0.1:4873/npm/"},
		{"comments and sections ignored", bare, map[string]string{"HOME": home}, "https://home.example/"},
		{"default: npm's own", filepath.Join(root, "none"), map[string]string{}, ""},
		{"no HOME", bare, map[string]string{}, ""},
	}
	for _, c := range cases {
		getenv := func(k string) string { return c.env[k] }
		if got := NPMRegistryFromConfig(c.dir, getenv); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestNPMDefaultRegistryAsksNPM: with no registry configured, the client
// asks npm for its default, and says so clearly when npm cannot answer.
func TestNPMDefaultRegistryAsksNPM(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"dist-tags":{"latest":"1.2.3"}}`))
	}))
	defer srv.Close()
	c := &NPMClient{client: srv.Client(), timeout: time.Second, attempts: 1,
		configGet: func(context.Context) (string, error) { return srv.URL + "/", nil }}
	if v, err := c.Latest(context.Background(), "pkg"); err != nil || v != "1.2.3" {
		t.Errorf("Latest = %q, %v", v, err)
	}

	c = &NPMClient{client: srv.Client(), timeout: time.Second, attempts: 1,
		configGet: func(context.Context) (string, error) { return "", errors.New("npm: not found") }}
	if _, err := c.Latest(context.Background(), "pkg"); err == nil || !strings.Contains(err.Error(), "no npm registry configured") {
		t.Errorf("err = %v", err)
	}
}
