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
}

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{docs: map[string]*Packument{}, tarballs: map[string][]byte{}, fetches: map[string]int{}}
}

// add publishes name@version; m fills dependencies and the rest.
func (f *fakeRegistry) add(t testing.TB, name, version string, m Manifest) {
	t.Helper()
	m.Name, m.Version = name, version
	doc := f.docs[name]
	if doc == nil {
		doc = &Packument{Name: name, DistTags: map[string]string{}, Versions: map[string]Manifest{}}
		f.docs[name] = doc
	}
	tgz := fakeTarball(t, m)
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

func fakeTarball(t testing.TB, m Manifest) []byte {
	t.Helper()
	pj := map[string]any{"name": m.Name, "version": m.Version, "main": "index.js"}
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

// Packument implements Registry.
func (f *fakeRegistry) Packument(ctx context.Context, name string) (*Packument, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches[name]++
	doc, ok := f.docs[name]
	if !ok {
		return nil, fmt.Errorf("package %q not found", name)
	}
	b, _ := json.Marshal(doc)
	return ParsePackument(name, b)
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
		doc, ok := f.docs[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		out := map[string]any{"name": doc.Name, "dist-tags": doc.DistTags}
		versions := map[string]any{}
		for v, m := range doc.Versions {
			b, _ := json.Marshal(m)
			var raw map[string]any
			json.Unmarshal(b, &raw)
			for k, val := range raw {
				if val == nil || k == "bundleDependencies" || k == "bundledDependencies" || k == "deprecated" && m.Deprecated == nil {
					delete(raw, k)
				}
			}
			raw["dist"] = map[string]any{"integrity": m.Dist.Integrity, "shasum": m.Dist.Shasum,
				"tarball": "http://" + r.Host + "/" + doc.Name + "/-/" + tarballName(doc.Name, v)}
			versions[v] = raw
		}
		out["versions"] = versions
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func tarballName(name, version string) string {
	return name[strings.LastIndex(name, "/")+1:] + "-" + version + ".tgz"
}
