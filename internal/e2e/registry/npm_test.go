package main

import (
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// doc is the part of a package document the tests read.
type doc struct {
	ID       string            `json:"_id"`
	Name     string            `json:"name"`
	DistTags map[string]string `json:"dist-tags"`
	Time     map[string]string `json:"time"`
	Versions map[string]struct {
		ID                   string            `json:"_id"`
		Description          string            `json:"description"`
		Dependencies         map[string]string `json:"dependencies"`
		OptionalDependencies map[string]string `json:"optionalDependencies"`
		OS                   []string          `json:"os"`
		CPU                  []string          `json:"cpu"`
		Bin                  map[string]string `json:"bin"`
		Dist                 struct {
			Tarball, Shasum, Integrity string
		} `json:"dist"`
	} `json:"versions"`
}

func treeServer(t *testing.T) *httptest.Server {
	t.Helper()
	g, err := newNPMTree("@anthropic-ai/claude-code=1.2.3", "")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}

// fetchDoc GETs a package document, abbreviated or full.
func fetchDoc(t *testing.T, url string, abbrev bool) (doc, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if abbrev {
		req.Header.Set("Accept", "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d doc
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return d, resp.Header.Get("Content-Type")
}

func sri(b []byte) (sha1hex, integrity string) {
	s1, s512 := sha1.Sum(b), sha512.Sum512(b)
	return hex.EncodeToString(s1[:]), "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
}

// TestNPMTreeDocuments checks every package and version of the tree, in
// both document forms: versions, dist-tags, dependencies, os/cpu, and dist
// fields that match the tarballs served.
func TestNPMTreeDocuments(t *testing.T) {
	srv := treeServer(t)
	want := map[string]struct {
		latest   string
		versions []string
	}{
		"agentbox-e2e-a":            {"1.1.0", []string{"1.0.0", "1.1.0", "2.0.0-beta.1"}},
		"agentbox-e2e-b":            {"2.2.0", []string{"1.0.0", "1.2.0", "2.1.0", "2.1.3", "2.2.0"}},
		"agentbox-e2e-win32":        {"1.0.0", []string{"1.0.0"}},
		"@anthropic-ai/claude-code": {"1.2.3", []string{"1.2.3"}},
	}
	for name, w := range want {
		for _, abbrev := range []bool{false, true} {
			d, ctype := fetchDoc(t, srv.URL+"/"+strings.Replace(name, "/", "%2f", 1), abbrev)
			if wantType := map[bool]string{false: "application/json", true: "application/vnd.npm.install-v1+json"}[abbrev]; ctype != wantType {
				t.Errorf("%s (abbreviated %v): Content-Type %q, want %q", name, abbrev, ctype, wantType)
			}
			if got := sortedKeys(d.Versions); !slices.Equal(got, w.versions) || d.DistTags["latest"] != w.latest || d.Name != name {
				t.Errorf("%s (abbreviated %v): name %q, versions %v, dist-tags %v; want %v, latest %s", name, abbrev, d.Name, got, d.DistTags, w.versions, w.latest)
			}
			if full := d.ID == name && d.Time[w.latest] != ""; full == abbrev {
				t.Errorf("%s (abbreviated %v): _id %q, time %v", name, abbrev, d.ID, d.Time)
			}
			for v, doc := range d.Versions {
				if (doc.ID == name+"@"+v) == abbrev || (doc.Description != "") == abbrev {
					t.Errorf("%s@%s (abbreviated %v): _id %q, description %q", name, v, abbrev, doc.ID, doc.Description)
				}
				checkDist(t, srv, name, v, doc.Dist.Tarball, doc.Dist.Shasum, doc.Dist.Integrity)
			}
		}
	}
	d, _ := fetchDoc(t, srv.URL+"/@anthropic-ai%2fclaude-code", true)
	m := d.Versions["1.2.3"]
	if want := map[string]string{"agentbox-e2e-a": "^1.0.0", "agentbox-e2e-b": "~2.1.0", "agentbox-e2e-alias": "npm:agentbox-e2e-a@^1.0.0"}; !mapsEqual(m.Dependencies, want) {
		t.Errorf("main dependencies %v, want %v", m.Dependencies, want)
	}
	if want := map[string]string{"agentbox-e2e-win32": "1.0.0"}; !mapsEqual(m.OptionalDependencies, want) || m.Bin["claude"] != "cli.js" {
		t.Errorf("main optionalDependencies %v, bin %v", m.OptionalDependencies, m.Bin)
	}
	a, _ := fetchDoc(t, srv.URL+"/agentbox-e2e-a", true)
	if got := a.Versions["1.1.0"].Dependencies; !mapsEqual(got, map[string]string{"agentbox-e2e-b": "^1.0.0"}) {
		t.Errorf("a@1.1.0 dependencies %v", got)
	}
	w, _ := fetchDoc(t, srv.URL+"/agentbox-e2e-win32", true)
	if v := w.Versions["1.0.0"]; !slices.Equal(v.OS, []string{"win32"}) || !slices.Equal(v.CPU, []string{"x64"}) {
		t.Errorf("win32 os %v, cpu %v", v.OS, v.CPU)
	}
	for _, p := range []string{"/agentbox-e2e-alias", "/agentbox-e2e-a/9.9.9", "/agentbox-e2e-a/-/agentbox-e2e-a-9.9.9.tgz", "/agentbox-e2e"} {
		if code, _ := get(t, srv.URL+p); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkDist checks that a version's tarball is on the server's address and
// matches its shasum and integrity.
func checkDist(t *testing.T, srv *httptest.Server, name, version, tarball, shasum, integrity string) []byte {
	t.Helper()
	base := name[strings.LastIndex(name, "/")+1:]
	if want := srv.URL + "/" + name + "/-/" + base + "-" + version + ".tgz"; tarball != want {
		t.Errorf("%s@%s: tarball %q, want %q", name, version, tarball, want)
	}
	code, tgz := get(t, tarball)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", tarball, code)
	}
	if s1, s512 := sri(tgz); s1 != shasum || s512 != integrity {
		t.Errorf("%s@%s: shasum %s, integrity %s; the tarball's are %s, %s", name, version, shasum, integrity, s1, s512)
	}
	return tgz
}

// TestNPMTreeScripts checks the generated code: the main command prints the
// tree it finds, a requires its b.
func TestNPMTreeScripts(t *testing.T) {
	g, err := newNPMTree("@anthropic-ai/claude-code=1.2.3", "")
	if err != nil {
		t.Fatal(err)
	}
	files := func(name, version string) map[string]string {
		t.Helper()
		p := g.find(name, version)
		if p == nil {
			t.Fatalf("no %s@%s", name, version)
		}
		return tarFiles(t, p.tarball)
	}
	cli := files("@anthropic-ai/claude-code", "1.2.3")["package/cli.js"]
	for _, want := range []string{"1.2.3 (agentbox e2e stand-in)", `require("agentbox-e2e-a")`, `require("agentbox-e2e-b")`, "tree: a ${a.version}, b ${b.version}, a's b ${a.b.version}"} {
		if !strings.Contains(cli, want) {
			t.Errorf("cli.js lacks %q:\n%s", want, cli)
		}
	}
	a := files("agentbox-e2e-a", "1.1.0")
	if !strings.Contains(a["package/index.js"], `require("agentbox-e2e-b")`) || !strings.Contains(a["package/package.json"], `"main": "index.js"`) {
		t.Errorf("a@1.1.0:\n%v", a)
	}
}

// tarFiles reads a package tarball.
func tarFiles(t *testing.T, tgz []byte) map[string]string {
	t.Helper()
	entries, err := readTarball(tgz)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		files[e.name] = string(e.body)
	}
	return files
}

// TestNPMTamper checks that after POST /-/agentbox-e2e/tamper the tarball's
// bytes no longer match the integrity advertised before, and that the
// document then advertises the new bytes' integrity.
func TestNPMTamper(t *testing.T) {
	srv := treeServer(t)
	before, _ := fetchDoc(t, srv.URL+"/agentbox-e2e-b", true)
	old := before.Versions["2.1.3"].Dist
	oldTgz := checkDist(t, srv, "agentbox-e2e-b", "2.1.3", old.Tarball, old.Shasum, old.Integrity)

	for _, tt := range []struct {
		method, query string
		code          int
	}{
		{http.MethodGet, "pkg=agentbox-e2e-b@2.1.3", http.StatusMethodNotAllowed},
		{http.MethodPost, "pkg=agentbox-e2e-b@9.9.9", http.StatusNotFound},
		{http.MethodPost, "pkg=agentbox-e2e-b", http.StatusNotFound},
		{http.MethodPost, "pkg=agentbox-e2e-b@2.1.3", http.StatusOK},
		{http.MethodPost, "pkg=agentbox-e2e-b@2.1.3", http.StatusOK}, // once is enough: no change
	} {
		req, _ := http.NewRequest(tt.method, srv.URL+"/-/agentbox-e2e/tamper?"+tt.query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s tamper?%s: %d %s, want %d", tt.method, tt.query, resp.StatusCode, body, tt.code)
		}
	}

	code, tgz := get(t, old.Tarball)
	if _, integrity := sri(tgz); code != http.StatusOK || integrity == old.Integrity {
		t.Fatalf("after tampering: %d, integrity %s unchanged", code, integrity)
	}
	if files := tarFiles(t, tgz); files["package/TAMPERED"] == "" || files["package/index.js"] != tarFiles(t, oldTgz)["package/index.js"] {
		t.Errorf("the tampered tarball: %v", sortedKeys(files))
	}
	for _, abbrev := range []bool{false, true} {
		after, _ := fetchDoc(t, srv.URL+"/agentbox-e2e-b", abbrev)
		n := after.Versions["2.1.3"].Dist
		checkDist(t, srv, "agentbox-e2e-b", "2.1.3", n.Tarball, n.Shasum, n.Integrity)
		if other := after.Versions["2.1.0"].Dist.Integrity; other != before.Versions["2.1.0"].Dist.Integrity {
			t.Errorf("b@2.1.0 changed too: %s", other)
		}
	}
}

func TestNPMFlags(t *testing.T) {
	tests := []struct {
		args []string
		err  string // "" for none
	}{
		{[]string{"-addr", "", "-npm-addr", "127.0.0.1:0", "-npm-package", "x=1.0.0", "-npm-tree"}, ""},
		{[]string{"-addr", "", "-npm-addr", "127.0.0.1:0", "-npm-package", "x=1.0.0", "-npm-tree", "-npm-tamper", "agentbox-e2e-a@1.1.0"}, ""},
		{[]string{"-addr", "", "-npm-addr", "127.0.0.1:0", "-npm-package", "x=1.0.0", "-npm-tamper", "x@1.0.0"}, ""},
		{[]string{"-addr", "", "-npm-addr", "127.0.0.1:0", "-npm-package", "x=1.0.0", "-npm-tamper", "agentbox-e2e-a@1.1.0"}, "no such package"},
		{[]string{"-addr", "", "-npm-addr", "127.0.0.1:0", "-npm-package", "x=1.0.0", "-npm-tree", "-npm-tarball", "x.tgz"}, "excludes -npm-tarball"},
		{[]string{"-npm-tree"}, "need -npm-addr"},
		{[]string{"-npm-tamper", "x@1.0.0"}, "need -npm-addr"},
	}
	for _, tt := range tests {
		c, err := parseFlags(tt.args)
		var s *servers
		if err == nil {
			s, err = start(c)
			s.shutdown()
		}
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.err)
		}
		if tt.err == "" && (len(s.lines) != 1 || !strings.HasPrefix(s.lines[0], "npm http://127.0.0.1:")) {
			t.Errorf("%q: lines %q", tt.args, s.lines)
		}
	}
}

// npmEnv is an environment for the real npm client that knows only srv:
// its own home, cache and empty config files, and a dead proxy on loopback
// for any host other than 127.0.0.1, so a stray request fails instead of
// leaving the machine.
func npmEnv(t *testing.T, srv *httptest.Server, cache string) []string {
	t.Helper()
	dir := t.TempDir()
	user, global := filepath.Join(dir, "npmrc"), filepath.Join(dir, "global-npmrc")
	for _, f := range []string{user, global} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"npm_config_userconfig=" + user, "npm_config_globalconfig=" + global,
		"npm_config_cache=" + cache, "npm_config_registry=" + srv.URL + "/",
		"npm_config_fetch_retries=0", // npm retries a corrupt tarball for minutes
		"npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false",
		"npm_config_proxy=http://127.0.0.1:9", "npm_config_https_proxy=http://127.0.0.1:9", "npm_config_noproxy=127.0.0.1",
	}
}

func runNPM(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestNPMTreeWithRealNPM installs the tree with the machine's npm: the
// ranges resolve as intended (b@1.x nested under a, the prerelease and the
// win32 package left out), `npm ci` installs the lock, and refuses a
// tarball tampered with after the lock was made.
func TestNPMTreeWithRealNPM(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm on this machine")
	}
	if testing.Short() {
		t.Skip("runs npm: not in -short")
	}
	srv := treeServer(t)
	proj := t.TempDir()
	pj := `{"name":"t","version":"1.0.0","private":true,"dependencies":{"@anthropic-ai/claude-code":"1.2.3"}}`
	if err := os.WriteFile(filepath.Join(proj, "package.json"), []byte(pj), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runNPM(t, proj, npmEnv(t, srv, t.TempDir()), "npm", "install"); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	checkLock(t, filepath.Join(proj, "package-lock.json"))
	ci := func() (string, error) {
		if err := os.RemoveAll(filepath.Join(proj, "node_modules")); err != nil {
			t.Fatal(err)
		}
		return runNPM(t, proj, npmEnv(t, srv, t.TempDir()), "npm", "ci")
	}
	if out, err := ci(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	out, err := runNPM(t, proj, nil, filepath.Join(proj, "node_modules", ".bin", "claude"))
	if want := "1.2.3 (agentbox e2e stand-in)\ntree: a 1.1.0, b 2.1.3, a's b 1.2.0, alias 1.1.0\n"; err != nil || out != want {
		t.Errorf("claude: %v\n%q, want %q", err, out, want)
	}
	if _, err := os.Stat(filepath.Join(proj, "node_modules", "agentbox-e2e-win32")); !os.IsNotExist(err) {
		t.Errorf("the win32 package is installed on linux: %v", err)
	}
	resp, err := http.Post(srv.URL+"/-/agentbox-e2e/tamper?pkg=agentbox-e2e-b@2.1.3", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("tamper: %v %v", resp, err)
	}
	resp.Body.Close()
	if out, err := ci(); err == nil || !strings.Contains(out, "EINTEGRITY") {
		t.Errorf("npm ci of a tampered tarball: %v, want EINTEGRITY:\n%s", err, out)
	}
}

// checkLock checks the tree npm resolved.
func checkLock(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct {
			Name, Version, Integrity string
			Optional                 bool
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"node_modules/@anthropic-ai/claude-code":                  "1.2.3",
		"node_modules/agentbox-e2e-a":                             "1.1.0",
		"node_modules/agentbox-e2e-b":                             "2.1.3",
		"node_modules/agentbox-e2e-a/node_modules/agentbox-e2e-b": "1.2.0",
		"node_modules/agentbox-e2e-alias":                         "1.1.0",
		"node_modules/agentbox-e2e-win32":                         "1.0.0",
	} {
		p, ok := lock.Packages[path]
		if !ok || p.Version != want || !strings.HasPrefix(p.Integrity, "sha512-") {
			t.Errorf("lock: %s = %+v, want version %s with an integrity", path, p, want)
		}
	}
	if lock.Packages["node_modules/agentbox-e2e-alias"].Name != "agentbox-e2e-a" || !lock.Packages["node_modules/agentbox-e2e-win32"].Optional {
		t.Errorf("lock: the alias or the optional package:\n%s", b)
	}
}
