package npm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeRegistry holds generated packages: each version's tarball has a
// package.json and an index.js that exports its name and version and
// require()s its dependencies.
type fakeRegistry struct {
	mu       sync.Mutex
	docs     map[string]*Packument
	tarballs map[string][]byte // "name@version"
	fetches  map[string]int
	// scripts holds each version's package.json scripts ("name@version").
	scripts map[string]map[string]string
	// full: answer with full package documents (each version's whole
	// package.json: scripts, no hasInstallScript), as mirrors do, instead of
	// the abbreviated form.
	full bool
}

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{docs: map[string]*Packument{}, tarballs: map[string][]byte{}, fetches: map[string]int{},
		scripts: map[string]map[string]string{}}
}

// add publishes name@version; m fills dependencies and the rest.
func (f *fakeRegistry) add(t testing.TB, name, version string, m Manifest) {
	t.Helper()
	f.addScripts(t, name, version, m, nil)
}

// addScripts publishes name@version with scripts in its package.json.
func (f *fakeRegistry) addScripts(t testing.TB, name, version string, m Manifest, scripts map[string]string) {
	t.Helper()
	m.Name, m.Version = name, version
	doc := f.docs[name]
	if doc == nil {
		doc = &Packument{Name: name, DistTags: map[string]string{}, Versions: map[string]Manifest{}}
		f.docs[name] = doc
	}
	if scripts != nil {
		f.scripts[name+"@"+version] = scripts
	}
	tgz := fakeTarball(t, m, scripts)
	f.tarballs[name+"@"+version] = tgz
	sum := sha512.Sum512(tgz)
	m.Dist.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	s1 := sha1.Sum(tgz)
	m.Dist.Shasum = hex.EncodeToString(s1[:])
	doc.Versions[version] = m
	if !strings.Contains(version, "-") {
		if cur, ok := doc.DistTags["latest"]; !ok || Compare(placedVersion(cur), placedVersion(version)) < 0 {
			doc.DistTags["latest"] = version
		}
	}
}

func fakeTarball(t testing.TB, m Manifest, scripts map[string]string) []byte {
	t.Helper()
	pj := map[string]any{"name": m.Name, "version": m.Version, "main": "index.js"}
	if scripts != nil {
		pj["scripts"] = scripts
	}
	if m.Dependencies != nil {
		pj["dependencies"] = m.Dependencies
	}
	if m.OptionalDependencies != nil {
		pj["optionalDependencies"] = m.OptionalDependencies
	}
	if m.PeerDependencies != nil {
		pj["peerDependencies"] = m.PeerDependencies
	}
	if len(m.Bin) > 0 {
		pj["bin"] = m.Bin
	}
	if m.OS != nil {
		pj["os"], pj["cpu"] = m.OS, m.CPU
	}
	pjBytes, _ := json.Marshal(pj)
	index := fmt.Sprintf("#!/usr/bin/env node\nexports.version = %q;\nif (require.main === module) console.log(%q + ' ' + %q);\n", m.Version, m.Name, m.Version)
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		data []byte
	}{{"package/package.json", pjBytes}, {"package/index.js", []byte(index)}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.data)
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

// Packument implements Registry: the document serve answers, parsed.
func (f *fakeRegistry) Packument(ctx context.Context, name string) (*Packument, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches[name]++
	b, ok := f.document(name, "fake.invalid")
	if !ok {
		return nil, fmt.Errorf("package %q not found: %w", name, ErrNotFound)
	}
	return ParsePackument(name, b)
}

// document renders name's package document, abbreviated or full, with
// tarball URLs on host.
func (f *fakeRegistry) document(name, host string) ([]byte, bool) {
	doc, ok := f.docs[name]
	if !ok {
		return nil, false
	}
	out := map[string]any{"name": doc.Name, "dist-tags": doc.DistTags}
	versions := map[string]any{}
	for v, m := range doc.Versions {
		b, _ := json.Marshal(m)
		var raw map[string]any
		json.Unmarshal(b, &raw)
		for k, val := range raw {
			if val == nil || k == "deprecated" && m.Deprecated == nil ||
				k == "hasInstallScript" || k == "_hasShrinkwrap" && !m.HasShrinkwrap {
				delete(raw, k)
			}
		}
		scripts := f.scripts[doc.Name+"@"+v]
		switch {
		case f.full && scripts != nil:
			raw["scripts"] = scripts
		case !f.full && (m.HasInstallScript || scripts["preinstall"] != "" || scripts["install"] != "" || scripts["postinstall"] != ""):
			raw["hasInstallScript"] = true // what the registry computes for the abbreviated form
		}
		raw["dist"] = map[string]any{"integrity": m.Dist.Integrity, "shasum": m.Dist.Shasum,
			"tarball": "http://" + host + "/" + doc.Name + "/-/" + tarballName(doc.Name, v)}
		versions[v] = raw
	}
	out["versions"] = versions
	b, _ := json.Marshal(out)
	return b, true
}

// serve answers as a registry: documents with tarball URLs back to itself.
func (f *fakeRegistry) serve(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		p := strings.TrimPrefix(r.URL.Path, "/")
		if name, file, ok := strings.Cut(p, "/-/"); ok {
			for key, tgz := range f.tarballs {
				n, v, _ := strings.Cut(key[1:], "@")
				n = key[:1] + n
				if n == name && file == tarballName(n, v) {
					w.Write(tgz)
					return
				}
			}
			http.NotFound(w, r)
			return
		}
		name := strings.Replace(p, "%2f", "/", 1)
		name = strings.Replace(name, "%2F", "/", 1)
		body, ok := f.document(name, r.Host)
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func tarballName(name, version string) string {
	return name[strings.LastIndex(name, "/")+1:] + "-" + version + ".tgz"
}
