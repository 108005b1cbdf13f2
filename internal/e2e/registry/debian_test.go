package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const ts = "20250520T000000Z"

// mirror stands in for the machine's apt mirror; it records the paths
// asked for.
type mirror struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newMirror(t *testing.T, h http.HandlerFunc) *mirror {
	t.Helper()
	m := &mirror{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.paths = append(m.paths, r.Method+" "+r.URL.EscapedPath())
		m.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mirror) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.paths
	m.paths = nil
	return p
}

var deb = bytes.Repeat([]byte("0123456789"), 1000)

func mirrorFiles(w http.ResponseWriter, r *http.Request) {
	modified := time.Date(2025, 5, 20, 0, 0, 0, 0, time.UTC)
	switch r.URL.Path {
	case "/debian/dists/bookworm/InRelease":
		w.Header().Set("ETag", `"main"`)
		http.ServeContent(w, r, "InRelease", modified, strings.NewReader("main InRelease\n"))
	case "/debian-security/dists/bookworm-security/InRelease":
		http.ServeContent(w, r, "InRelease", modified, strings.NewReader("security InRelease\n"))
	case "/debian/pool/main/l/libx/libx++6_1.0+b1_amd64.deb":
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			// as a web server may do: the proxy must not ask for it
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = zw.Write(deb)
			_ = zw.Close()
			return
		}
		http.ServeContent(w, r, "x.deb", modified, bytes.NewReader(deb))
	case "/debian/old":
		http.Redirect(w, r, "/debian/dists/bookworm/InRelease", http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

func TestDebianProxy(t *testing.T) {
	m := newMirror(t, mirrorFiles)
	d, err := newDebianProxy(m.URL+"/debian", m.URL+"/debian-security/")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()
	pool := "/pool/main/l/libx/libx++6_1.0+b1_amd64.deb"
	tests := []struct {
		method, path, header string // header: "Name: value" or ""
		code                 int
		body                 string // prefix of the body
		upstream             string // the mirror request, or "" for none
	}{
		{"GET", "/debian/" + ts + "/dists/bookworm/InRelease", "", 200, "main InRelease", "GET /debian/dists/bookworm/InRelease"},
		{"GET", "/archive/debian/" + ts + "/dists/bookworm/InRelease", "", 200, "main InRelease", "GET /debian/dists/bookworm/InRelease"},
		{"GET", "/debian-security/" + ts + "/dists/bookworm-security/InRelease", "", 200, "security InRelease", "GET /debian-security/dists/bookworm-security/InRelease"},
		{"HEAD", "/debian/" + ts + "/dists/bookworm/InRelease", "", 200, "", "HEAD /debian/dists/bookworm/InRelease"},
		{"GET", "/debian/" + ts + pool, "Range: bytes=10-13", 206, "0123", "GET /debian" + pool},
		{"GET", "/debian/" + ts + "/dists/bookworm/InRelease", `If-None-Match: "main"`, 304, "", "GET /debian/dists/bookworm/InRelease"},
		{"GET", "/debian/" + ts + "/dists/bookworm/Release", "", 404, "", "GET /debian/dists/bookworm/Release"},
		{"GET", "/debian/" + ts + "/old", "", 200, "main InRelease", "GET /debian/old"},
		{"GET", "/debian/" + ts + "/", "", 200, "<html>", ""},
		{"GET", "/debian/" + ts, "", 200, "<html>", ""},
		{"HEAD", "/debian-security/" + ts + "/", "", 200, "", ""},
		{"GET", "/debian/2025-05-20/dists/bookworm/InRelease", "", 404, "", ""},
		{"GET", "/debian/20250520T000000/dists/bookworm/InRelease", "", 404, "", ""},
		{"GET", "/debian/latest/dists/bookworm/InRelease", "", 404, "", ""},
		{"GET", "/ubuntu/" + ts + "/dists/noble/InRelease", "", 404, "", ""},
		{"GET", "/", "", 404, "", ""},
		{"GET", "/debian/" + ts + "/../../etc/passwd", "", 400, "", ""},
		{"GET", "/debian/" + ts + "/dists/%2e%2e/%2e%2e/x", "", 400, "", ""},
		{"POST", "/debian/" + ts + "/dists/bookworm/InRelease", "", 405, "", ""},
		// The plain mirror: the same mirrors, without the timestamp.
		{"GET", "/plain/debian/dists/bookworm/InRelease", "", 200, "main InRelease", "GET /debian/dists/bookworm/InRelease"},
		{"GET", "/plain/debian-security/dists/bookworm-security/InRelease", "", 200, "security InRelease", "GET /debian-security/dists/bookworm-security/InRelease"},
		{"GET", "/plain/debian" + pool, "Range: bytes=10-13", 206, "0123", "GET /debian" + pool},
		{"GET", "/plain/debian/", "", 404, "", ""},
		{"GET", "/plain/debian", "", 404, "", ""},
		{"GET", "/plain/ubuntu/dists/noble/InRelease", "", 404, "", ""},
		{"GET", "/plain/debian/../../etc/passwd", "", 400, "", ""},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawPath = tt.path // keep ".." and escapes as written
		if k, v, ok := strings.Cut(tt.header, ": "); ok {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || !strings.HasPrefix(string(body), tt.body) || (tt.method == "HEAD" && len(body) > 0) {
			t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.path, resp.StatusCode, body, tt.code, tt.body)
		}
		if tt.header == "Range: bytes=10-13" && (resp.Header.Get("Content-Range") != "bytes 10-13/10000" || len(body) != 4) {
			t.Errorf("a range: Content-Range %q, %d bytes", resp.Header.Get("Content-Range"), len(body))
		}
		got := m.take()
		if tt.upstream == "" && len(got) > 0 || tt.upstream != "" && (len(got) == 0 || got[0] != tt.upstream) {
			t.Errorf("%s %s: the mirror saw %q, want %q", tt.method, tt.path, got, tt.upstream)
		}
	}
}

// TestDebianProxyHeaders checks that a file's length and dates pass through
// as the mirror sent them.
func TestDebianProxyHeaders(t *testing.T) {
	m := newMirror(t, mirrorFiles)
	d, err := newDebianProxy(m.URL+"/debian", m.URL+"/debian-security")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/debian/"+ts+"/pool/main/l/libx/libx++6_1.0+b1_amd64.deb", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.ContentLength != int64(len(deb)) || !bytes.Equal(body, deb) || resp.Header.Get("Last-Modified") != "Tue, 20 May 2025 00:00:00 GMT" {
		t.Errorf("Content-Length %d, Last-Modified %q, %d bytes", resp.ContentLength, resp.Header.Get("Last-Modified"), len(body))
	}
}

// TestDebianProxyStreams checks that the proxy passes bytes on as the
// mirror sends them: the client reads the first half while the mirror
// still holds the second.
func TestDebianProxyStreams(t *testing.T) {
	release := make(chan struct{})
	m := newMirror(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first half;")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		_, _ = io.WriteString(w, "second half")
	})
	d, err := newDebianProxy(m.URL+"/debian", m.URL+"/debian-security")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()
	type result struct {
		resp  *http.Response
		first []byte
		err   error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/debian/" + ts + "/pool/big.deb")
		if err != nil {
			done <- result{err: err}
			return
		}
		first := make([]byte, len("first half;"))
		_, err = io.ReadFull(resp.Body, first)
		done <- result{resp, first, err}
	}()
	var resp *http.Response
	select {
	case r := <-done:
		if r.err != nil || string(r.first) != "first half;" {
			t.Fatalf("first read: %q, %v", r.first, r.err)
		}
		resp = r.resp
	case <-time.After(3 * time.Second):
		close(release)
		t.Fatal("the proxy held the first half back until the mirror finished")
	}
	defer resp.Body.Close()
	close(release)
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != "second half" {
		t.Errorf("rest %q", rest)
	}
}

// TestDebianProxyMirrorDown checks a 502 that does not name the mirror.
func TestDebianProxyMirrorDown(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	d, err := newDebianProxy(down.URL+"/debian", down.URL+"/debian-security")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()
	code, body := get(t, srv.URL+"/debian/"+ts+"/dists/bookworm/InRelease")
	host := strings.TrimPrefix(down.URL, "http://")
	if code != http.StatusBadGateway || strings.Contains(string(body), host) {
		t.Errorf("%d %q: want 502 without %s", code, body, host)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAptMirrors(t *testing.T) {
	const deb822 = `Types: deb
# http://snapshot.example.test/archive/debian/20250520T000000Z
URIs: http://mirror.example.test/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.test/debian-security
Suites: bookworm-security
Components: main
`
	tests := []struct {
		name           string
		files          map[string]string
		main, security string
	}{
		{"deb822", map[string]string{"sources.list.d/debian.sources": deb822},
			"http://mirror.example.test/debian", "http://mirror.example.test/debian-security"},
		{"one-line", map[string]string{"sources.list": `# deb http://old.example.test/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] http://a.example.test/debian bookworm main
deb-src http://b.example.test/debian bookworm main
deb http://s.example.test/debian-security bookworm-security main # trailing comment
`}, "http://a.example.test/debian", "http://s.example.test/debian-security"},
		{"skipped entries", map[string]string{
			"sources.list": "deb cdrom:[Debian 12]/ bookworm main\ndeb file:/srv/debian bookworm main\ndeb [broken http://x.example.test/ bookworm\n",
			"sources.list.d/a.sources": "Types: deb\nEnabled: no\nURIs: http://off.example.test/debian\nSuites: bookworm\n\n" +
				"Types: deb-src\nURIs:\n http://src.example.test/debian\nSuites: bookworm-security\n",
			"sources.list.d/b.list":                      "deb https://b.example.test/debian bookworm main\n",
			"sources.list.d/nodesource.sources.disabled": "Types: deb\nURIs: http://node.example.test/\nSuites: nodistro\n",
		}, "https://b.example.test/debian", "http://src.example.test/debian"},
		{"none", map[string]string{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			m, err := aptMirrors(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.main != tt.main || m.security != tt.security {
				t.Errorf("main %q, security %q; want %q, %q", m.main, m.security, tt.main, tt.security)
			}
		})
	}
}

// TestDebianFlags starts the stand-in as run does: mirrors from apt's
// sources or from the flags, and a listener line on stdout.
func TestDebianFlags(t *testing.T) {
	m := newMirror(t, mirrorFiles)
	other := newMirror(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "override") })
	apt := t.TempDir()
	writeFiles(t, apt, map[string]string{"sources.list.d/debian.sources": "Types: deb\nURIs: " + m.URL + "/debian\nSuites: bookworm\n\n" +
		"Types: deb\nURIs: " + m.URL + "/debian-security\nSuites: bookworm-security\n"})
	empty := t.TempDir()
	tests := []struct {
		args []string
		body string // of the main InRelease; "" for an error
		err  string
	}{
		{[]string{"-apt-dir", apt}, "main InRelease", ""},
		{[]string{"-apt-dir", empty, "-debian-mirror", other.URL, "-debian-security-mirror", other.URL}, "override", ""},
		{[]string{"-apt-dir", apt, "-debian-mirror", other.URL}, "override", ""},
		{[]string{"-apt-dir", empty}, "", "pass -debian-mirror"},
		{[]string{"-apt-dir", empty, "-debian-mirror", other.URL}, "", "pass -debian-security-mirror"},
		{[]string{"-apt-dir", apt, "-debian-mirror", "ftp://x.example.test/debian"}, "", "want an http or https URL"},
	}
	for _, tt := range tests {
		c, err := parseFlags(append([]string{"-addr", "", "-debian-addr", "127.0.0.1:0"}, tt.args...))
		if err != nil {
			t.Fatal(err)
		}
		s, err := start(c)
		if tt.err != "" {
			s.shutdown()
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || len(s.lines) != 1 || !strings.HasPrefix(s.lines[0], "debian http://127.0.0.1:") || !strings.HasSuffix(s.lines[0], "/") {
			t.Fatalf("%q: %v, lines %q", tt.args, err, s.lines)
		}
		code, body := get(t, strings.TrimPrefix(s.lines[0], "debian ")+"debian/"+ts+"/dists/bookworm/InRelease")
		s.shutdown()
		if code != http.StatusOK || !strings.HasPrefix(string(body), tt.body) {
			t.Errorf("%q: %d %q, want %q", tt.args, code, body, tt.body)
		}
	}
	if _, err := parseFlags([]string{"-debian-mirror", "http://x.example.test/"}); err == nil || !strings.Contains(err.Error(), "need -debian-addr") {
		t.Errorf("-debian-mirror alone: %v", err)
	}
}
