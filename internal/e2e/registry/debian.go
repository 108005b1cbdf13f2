package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// debianProxy stands in for Debian's snapshot archive: it serves
// /debian/TS/PATH and /debian-security/TS/PATH (also under /archive/, as
// the real archive spells them) from the machine's own mirrors, whatever
// TS, streaming and caching nothing. /debian/TS/ itself answers 200, never
// a redirect, so that a client keeps the timestamp it asked for. Under
// /plain/ it is a plain mirror instead: /plain/debian/PATH and
// /plain/debian-security/PATH, the mirrors' files as they are today.
type debianProxy struct {
	mirrors map[string]*url.URL // "debian", "debian-security" → the mirror's base URL
	client  *http.Client
}

var snapshotTime = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z$`)

// forwardedRequest and forwardedResponse are the headers passed on, so
// that apt's conditional and partial downloads work through the proxy.
var (
	forwardedRequest  = []string{"Range", "If-Range", "If-Modified-Since", "If-None-Match", "User-Agent"}
	forwardedResponse = []string{"Content-Type", "Content-Length", "Content-Range", "Accept-Ranges", "Last-Modified", "ETag"}
)

func newDebianProxy(main, security string) (*debianProxy, error) {
	d := &debianProxy{mirrors: map[string]*url.URL{}}
	for archive, s := range map[string]string{"debian": main, "debian-security": security} {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s mirror %q: want an http or https URL", archive, s)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath, u.RawQuery, u.Fragment = "", "", ""
		d.mirrors[archive] = u
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true // pass the bytes and Content-Length on as they are
	t.ResponseHeaderTimeout = time.Minute
	d.client = &http.Client{Transport: t}
	return d, nil
}

// splitSnapshot splits /[archive/]ARCHIVE/TS[/REST] (escaped); ok is false
// for any other path.
func splitSnapshot(p string) (archive, rest string, ok bool) {
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimPrefix(p, "archive/")
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 2 || !snapshotTime.MatchString(parts[1]) {
		return "", "", false
	}
	if parts[0] != "debian" && parts[0] != "debian-security" {
		return "", "", false
	}
	if len(parts) == 3 {
		rest = parts[2]
	}
	return parts[0], rest, true
}

// splitPlain splits /plain/ARCHIVE/REST (escaped), REST not empty; ok is
// false for any other path.
func splitPlain(p string) (archive, rest string, ok bool) {
	p, ok = strings.CutPrefix(p, "/plain/")
	if !ok {
		return "", "", false
	}
	archive, rest, _ = strings.Cut(p, "/")
	if archive != "debian" && archive != "debian-security" || rest == "" {
		return "", "", false
	}
	return archive, rest, true
}

func (d *debianProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if strings.Contains(r.URL.Path, "..") || strings.Contains(r.URL.EscapedPath(), "..") {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	archive, rest, ok := splitSnapshot(r.URL.EscapedPath())
	if !ok {
		archive, rest, ok = splitPlain(r.URL.EscapedPath())
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rest == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, "<html><body>agentbox e2e stand-in for a snapshot of "+archive+"</body></html>\n")
		}
		return
	}
	d.forward(w, r, d.mirrors[archive], rest)
}

// forward streams base/rest to w.
func (d *debianProxy) forward(w http.ResponseWriter, r *http.Request, base *url.URL, rest string) {
	u, err := url.Parse(base.String() + "/" + rest)
	if err != nil {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), nil)
	if err != nil {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	for _, h := range forwardedRequest {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		// The error names the mirror: keep its host out of the answer and the log.
		msg := strings.ReplaceAll(err.Error(), base.Host, "<mirror>")
		log.Printf("debian: %s %s: %s", r.Method, r.URL.Path, msg)
		http.Error(w, "upstream: "+msg, http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, h := range forwardedResponse {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(flushWriter{w}, resp.Body); err != nil && !errors.Is(err, r.Context().Err()) {
		log.Printf("debian: %s %s: copying: %v", r.Method, r.URL.Path, strings.ReplaceAll(err.Error(), base.Host, "<mirror>"))
	}
}

// flushWriter flushes after every write, so that a client sees bytes as
// the mirror sends them.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// debianHandler is the snapshot stand-in for c: mirrors from the flags,
// else from apt's sources.
func debianHandler(c config) (http.Handler, error) {
	main, security := c.debianMirror, c.debianSecurityMirror
	if main == "" || security == "" {
		m, err := aptMirrors(c.aptDir)
		if err != nil {
			return nil, err
		}
		if main == "" {
			if main = m.main; main == "" {
				return nil, fmt.Errorf("no Debian mirror in %s's sources: pass -debian-mirror URL", c.aptDir)
			}
			log.Printf("debian: /debian from the mirror in %s", m.mainFrom)
		}
		if security == "" {
			if security = m.security; security == "" {
				return nil, fmt.Errorf("no Debian security mirror (suite *-security) in %s's sources: pass -debian-security-mirror URL", c.aptDir)
			}
			log.Printf("debian: /debian-security from the mirror in %s", m.securityFrom)
		}
	}
	return newDebianProxy(main, security)
}
