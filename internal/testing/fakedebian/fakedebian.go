// Package fakedebian serves a fake Debian archive for tests, in the layout
// of the snapshot service: BASE/debian/TIMESTAMP/dists/SUITE/main/binary-ARCH/
// Packages.gz, and BASE/debian-security/... for the -security suites. Each
// timestamp holds its own state (nothing is inherited from an earlier one); a
// request for any timestamp is answered from the latest state at or before
// it. With Redirect set, a request for a snapshot's root redirects to that
// state's timestamp, as the real service does.
package fakedebian

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/ulikunitz/xz"
)

// Package is one stanza of a fake Packages index. An empty Architecture is
// the architecture the package is added under.
type Package struct {
	Name, Version, Architecture   string
	Depends, PreDepends, Provides string
}

// Server is a fake archive on a loopback httptest server.
type Server struct {
	// Redirect makes a snapshot's root answer with a redirect to the
	// timestamp of the state that serves it.
	Redirect bool
	// XZ serves every index as Packages.xz and none as Packages.gz, as
	// Debian's -updates and -security suites are; by default only
	// Packages.gz is served.
	XZ bool

	srv      *httptest.Server
	mu       sync.Mutex
	packages map[key][]Package
	raw      map[key][]byte
	failures map[string][]int
	requests []string
}

// key names one Packages index.
type key struct{ archive, ts, suite, arch string }

// New starts a fake archive, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{packages: map[key][]Package{}, raw: map[key][]byte{}, failures: map[string][]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// Base is the archive's base URL, the parent of debian/ and debian-security/.
func (s *Server) Base() string { return s.srv.URL + "/archive" }

// Client is an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Add adds packages to the index of suite and arch in the state at ts.
func (s *Server) Add(ts, suite, arch string, pkgs ...Package) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := newKey(ts, suite, arch)
	for _, p := range pkgs {
		if p.Architecture == "" {
			p.Architecture = arch
		}
		s.packages[k] = append(s.packages[k], p)
	}
}

// SetRaw makes data, served as is, the Packages.gz of suite and arch at ts,
// in place of the packages added there (see Gzip).
func (s *Server) SetRaw(ts, suite, arch string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw[newKey(ts, suite, arch)] = data
}

// Fail makes the next requests whose path contains part answer with the
// given statuses, one a request; status 0 drops the connection unanswered.
func (s *Server) Fail(part string, statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[part] = append(s.failures[part], statuses...)
}

// Requests returns the paths requested so far, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func newKey(ts, suite, arch string) key {
	archive := "debian"
	if strings.HasSuffix(suite, "-security") {
		archive = "debian-security"
	}
	return key{archive, ts, suite, arch}
}

var route = regexp.MustCompile(`^/archive/(debian|debian-security)/([0-9]{8}T[0-9]{6}Z)/(?:dists/([^/]+)/main/binary-([^/]+)/Packages\.(gz|xz))?$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.URL.Path)
	if s.fail(w, r.URL.Path) {
		return
	}
	m := route.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.NotFound(w, r)
		return
	}
	archive, ts, suite, arch := m[1], m[2], m[3], m[4]
	if suite != "" && (m[5] == "xz") != s.XZ {
		http.NotFound(w, r)
		return
	}
	state := s.stateAt(archive, ts)
	switch {
	case state == "":
		http.Error(w, "no snapshot at or before "+ts, http.StatusNotFound)
	case suite == "" && s.Redirect && state != ts:
		http.Redirect(w, r, fmt.Sprintf("/archive/%s/%s/", archive, state), http.StatusMovedPermanently)
	case suite == "":
		fmt.Fprintf(w, "Index of /%s/%s/\n", archive, state)
	default:
		s.serveIndex(w, r, key{archive, state, suite, arch})
	}
}

// fail answers the request with a queued failure, if one matches path.
func (s *Server) fail(w http.ResponseWriter, path string) bool {
	for part, statuses := range s.failures {
		if len(statuses) == 0 || !strings.Contains(path, part) {
			continue
		}
		s.failures[part] = statuses[1:]
		if statuses[0] == 0 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}
		http.Error(w, http.StatusText(statuses[0]), statuses[0])
		return true
	}
	return false
}

// stateAt returns the latest timestamp at or before ts holding an index of
// archive, or "".
func (s *Server) stateAt(archive, ts string) string {
	best := ""
	for k := range s.packages {
		if k.archive == archive && k.ts <= ts && k.ts > best {
			best = k.ts
		}
	}
	for k := range s.raw {
		if k.archive == archive && k.ts <= ts && k.ts > best {
			best = k.ts
		}
	}
	return best
}

func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request, k key) {
	data, ok := s.raw[k]
	if !ok {
		pkgs, found := s.packages[k]
		if !found {
			http.NotFound(w, r)
			return
		}
		data = Gzip(render(pkgs))
		if s.XZ {
			data = XZ(render(pkgs))
		}
	}
	w.Write(data)
}

// XZ returns data compressed with xz.
func XZ(data []byte) []byte {
	var buf bytes.Buffer
	zw, err := xz.NewWriter(&buf)
	if err != nil {
		panic(err)
	}
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

// Gzip returns data compressed with gzip.
func Gzip(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

// render writes packages as a Packages index, sorted by name and version.
func render(pkgs []Package) []byte {
	pkgs = append([]Package(nil), pkgs...)
	sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].Name < pkgs[j].Name })
	var b bytes.Buffer
	for _, p := range pkgs {
		fmt.Fprintf(&b, "Package: %s\nVersion: %s\nArchitecture: %s\n", p.Name, p.Version, p.Architecture)
		for _, f := range [][2]string{{"Pre-Depends", p.PreDepends}, {"Depends", p.Depends}, {"Provides", p.Provides}} {
			if f[1] != "" {
				fmt.Fprintf(&b, "%s: %s\n", f[0], f[1])
			}
		}
		fmt.Fprintf(&b, "Description: fake %s\n\n", p.Name)
	}
	return b.Bytes()
}
