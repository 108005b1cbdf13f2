package main

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"
)

// npmName is npm's package name grammar (lower case, optional scope).
var (
	npmName    = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	npmVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
)

// agentCommands are the commands of the agent catalog's packages, so that a
// generated package answers to the name the agent is run by.
var agentCommands = map[string]string{
	"@anthropic-ai/claude-code": "claude",
	"@openai/codex":             "codex",
	"@github/copilot":           "copilot",
	"@google/gemini-cli":        "gemini",
	"opencode-ai":               "opencode",
}

// npmPackage is one version of a package: its package.json and tarball.
type npmPackage struct {
	name, version string
	manifest      map[string]any // package.json
	tarball       []byte
	shasum        string // sha1, hex
	integrity     string // sha512, SRI
	file          string // the tarball's file name: BASE-VERSION.tgz
	tampered      bool
}

// parseNPMSpec splits -npm-package's NAME=VERSION.
func parseNPMSpec(spec string) (name, version string, err error) {
	i := strings.LastIndex(spec, "=")
	if i <= 0 {
		return "", "", fmt.Errorf("-npm-package %q: want NAME=VERSION", spec)
	}
	name, version = spec[:i], spec[i+1:]
	if !npmName.MatchString(name) {
		return "", "", fmt.Errorf("-npm-package: invalid npm package name %q", name)
	}
	if !npmVersion.MatchString(version) {
		return "", "", fmt.Errorf("-npm-package: invalid version %q (want 1.2.3)", version)
	}
	return name, version, nil
}

// newNPMPackage is the package -npm-package names: the tarball at
// tarballPath, or a generated package whose command bin prints the version.
func newNPMPackage(spec, tarballPath, bin string) (*npmPackage, error) {
	name, version, err := parseNPMSpec(spec)
	if err != nil {
		return nil, err
	}
	if tarballPath == "" {
		return generate(mainManifest(name, version, bin, false), map[string]string{"cli.js": mainCLI(name, version, false)})
	}
	b, err := os.ReadFile(tarballPath)
	if err != nil {
		return nil, err
	}
	m := tarballManifest(b)
	if m == nil {
		m = map[string]any{}
	}
	m["name"], m["version"] = name, version
	p := &npmPackage{name: name, version: version, manifest: m, file: path.Base(name) + "-" + version + ".tgz"}
	p.setTarball(b)
	return p, nil
}

// setTarball sets the tarball and its checksums.
func (p *npmPackage) setTarball(b []byte) {
	s1 := sha1.Sum(b)
	s512 := sha512.Sum512(b)
	p.tarball = b
	p.shasum = hex.EncodeToString(s1[:])
	p.integrity = "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
}

// generate packs a package: package.json from manifest, and files (name under
// package/ → content; a file that starts with "#!" is executable).
func generate(manifest map[string]any, files map[string]string) (*npmPackage, error) {
	pj, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return nil, err
	}
	entries := []tarEntry{{"package/package.json", 0o644, append(pj, '\n')}}
	for _, name := range sortedKeys(files) {
		mode := int64(0o644)
		if strings.HasPrefix(files[name], "#!") {
			mode = 0o755
		}
		entries = append(entries, tarEntry{"package/" + name, mode, []byte(files[name])})
	}
	tgz, err := packTarball(entries)
	if err != nil {
		return nil, err
	}
	name, version := manifest["name"].(string), manifest["version"].(string)
	p := &npmPackage{name: name, version: version, manifest: manifest, file: path.Base(name) + "-" + version + ".tgz"}
	p.setTarball(tgz)
	return p, nil
}

// tamper replaces the tarball with different bytes (one more file), once.
func (p *npmPackage) tamper() error {
	if p.tampered {
		return nil
	}
	b, err := tamperTarball(p.tarball)
	if err != nil {
		return fmt.Errorf("tampering with %s@%s: %w", p.name, p.version, err)
	}
	p.setTarball(b)
	p.tampered = true
	return nil
}

// npmRegistry serves packages as npm's registry API does: the package
// document (full, or abbreviated for Accept: application/vnd.npm.install-v1+json)
// at /NAME (npm asks for /@scope%2fname), one version's document at
// /NAME/VERSION, the tarball at /NAME/-/FILE; 404 for anything else.
// POST /-/agentbox-e2e/tamper?pkg=NAME@VERSION changes that version's
// tarball from then on.
type npmRegistry struct {
	mu       sync.Mutex
	packages map[string][]*npmPackage // by name, in publishing order
}

const tamperPath = "-/agentbox-e2e/tamper"

func newNPMRegistry(pkgs ...*npmPackage) *npmRegistry {
	g := &npmRegistry{packages: map[string][]*npmPackage{}}
	for _, p := range pkgs {
		g.packages[p.name] = append(g.packages[p.name], p)
	}
	return g
}

// find returns the package at version, or nil.
func (g *npmRegistry) find(name, version string) *npmPackage {
	for _, p := range g.packages[name] {
		if p.version == version {
			return p
		}
	}
	return nil
}

// latest is the last published version that is not a prerelease, else the
// last one.
func latest(versions []*npmPackage) string {
	for i := len(versions) - 1; i >= 0; i-- {
		if !strings.Contains(versions[i].version, "-") {
			return versions[i].version
		}
	}
	return versions[len(versions)-1].version
}

// tamperSpec tampers with NAME@VERSION.
func (g *npmRegistry) tamperSpec(spec string) (*npmPackage, error) {
	i := strings.LastIndex(spec, "@")
	if i <= 0 {
		return nil, fmt.Errorf("%q: want NAME@VERSION", spec)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.find(spec[:i], spec[i+1:])
	if p == nil {
		return nil, fmt.Errorf("%q: the registry serves no such package", spec)
	}
	old := p.integrity
	if err := p.tamper(); err != nil || p.integrity == old {
		return p, err
	}
	log.Printf("npm: tampered with %s: integrity %s, advertised before as %s", spec, p.integrity, old)
	return p, nil
}

func (g *npmRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// EscapedPath keeps %2f; unescape it ourselves so that both forms match.
	p0, err := url.PathUnescape(r.URL.EscapedPath())
	if err != nil {
		http.Error(w, `{"error":"bad path"}`, http.StatusBadRequest)
		return
	}
	p0 = strings.TrimPrefix(p0, "/")
	if p0 == tamperPath {
		g.serveTamper(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return
	}
	g.mu.Lock()
	name, rest := g.route(p0)
	versions := g.packages[name]
	var doc map[string]any
	var tarball *npmPackage
	switch {
	case versions == nil:
	case rest == "":
		doc = g.document(r, name)
	case strings.HasPrefix(rest, "-/"):
		for _, p := range versions {
			if "-/"+p.file == rest {
				tarball = p
			}
		}
	default:
		if p := g.find(name, rest); p != nil {
			doc = versionDoc(r, p, false)
		}
	}
	var tgz []byte
	if tarball != nil {
		tgz = tarball.tarball
	}
	g.mu.Unlock()
	switch {
	case tgz != nil:
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, tarball.file, time.Time{}, bytes.NewReader(tgz))
	case doc != nil:
		writeJSON(w, r, doc, docType(r, rest))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"not found"}`)
	}
}

// route splits a path into a known package name and the rest after it.
func (g *npmRegistry) route(p string) (name, rest string) {
	for n := range g.packages {
		if p == n || p == n+"/" {
			return n, ""
		}
		if r, ok := strings.CutPrefix(p, n+"/"); ok {
			return n, r
		}
	}
	return "", ""
}

func (g *npmRegistry) serveTamper(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, `{"error":"POST only"}`, http.StatusMethodNotAllowed)
		return
	}
	p, err := g.tamperSpec(r.URL.Query().Get("pkg"))
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	writeJSON(w, r, map[string]string{"package": p.name + "@" + p.version, "integrity": p.integrity}, "application/json")
}

const abbreviated = "application/vnd.npm.install-v1+json"

// wantsAbbreviated reports whether the client asked for the abbreviated
// ("corgi") package document, as npm does when installing.
func wantsAbbreviated(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), abbreviated)
}

func docType(r *http.Request, rest string) string {
	if rest == "" && wantsAbbreviated(r) {
		return abbreviated
	}
	return "application/json"
}

// abbreviatedKeys are the package.json fields an abbreviated document keeps.
var abbreviatedKeys = []string{"name", "version", "dependencies", "optionalDependencies", "devDependencies",
	"peerDependencies", "peerDependenciesMeta", "bundleDependencies", "bin", "directories", "engines", "os", "cpu",
	"deprecated", "_hasShrinkwrap"}

// versionDoc is one version's entry of a document: its package.json with
// _id and dist, or the abbreviated subset.
func versionDoc(r *http.Request, p *npmPackage, abbrev bool) map[string]any {
	v := map[string]any{}
	if abbrev {
		for _, k := range abbreviatedKeys {
			if x, ok := p.manifest[k]; ok {
				v[k] = x
			}
		}
	} else {
		maps.Copy(v, p.manifest)
		v["_id"] = p.name + "@" + p.version
	}
	v["name"], v["version"] = p.name, p.version
	v["dist"] = map[string]any{
		"tarball":   scheme(r) + "://" + r.Host + "/" + p.name + "/-/" + p.file,
		"shasum":    p.shasum,
		"integrity": p.integrity,
	}
	return v
}

// document is the package document of name; g.mu is held.
func (g *npmRegistry) document(r *http.Request, name string) map[string]any {
	abbrev := wantsAbbreviated(r)
	const modified = "2020-01-01T00:00:00.000Z"
	versions, times := map[string]any{}, map[string]string{"created": modified, "modified": modified}
	for i, p := range g.packages[name] {
		versions[p.version] = versionDoc(r, p, abbrev)
		times[p.version] = time.Date(2020, 1, 1, 0, i, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
	}
	doc := map[string]any{
		"name":      name,
		"dist-tags": map[string]string{"latest": latest(g.packages[name])},
		"versions":  versions,
		"modified":  modified,
	}
	if !abbrev {
		doc["_id"] = name
		doc["time"] = times
	}
	return doc
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any, ctype string) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}

// scheme is the request's: https over TLS.
func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// requireToken makes h answer 401 to a request without
// "Authorization: Bearer TOKEN", as a registry that wants a token does.
func requireToken(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentbox-e2e"`)
			http.Error(w, `{"error":"authentication required"}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
