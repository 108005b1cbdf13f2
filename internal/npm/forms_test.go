package npm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// scriptsRegistry publishes a CLI whose postinstall leaves a file, and
// dependencies with each kind of install script: preinstall, install (the
// "node-gyp rebuild" that npm's publish adds for a binding.gyp), none
// (prepare and test are not install scripts). withGyp leaves the gyp package
// out, for an npm ci without node-gyp.
func scriptsRegistry(t testing.TB, full, withGyp bool) *fakeRegistry {
	f := newFakeRegistry()
	f.full = full
	cliDeps := deps("pre", "^1", "plain", "^1")
	if withGyp {
		cliDeps["gyp"] = "^1"
	}
	f.addScripts(t, "@acme/cli", "1.0.0", Manifest{Dependencies: cliDeps},
		map[string]string{"postinstall": `node -e "require('fs').writeFileSync('postinstall-ran', '')"`})
	f.addScripts(t, "pre", "1.0.0", Manifest{},
		map[string]string{"preinstall": `node -e "require('fs').writeFileSync('preinstall-ran', '')"`})
	f.addScripts(t, "plain", "1.0.0", Manifest{}, map[string]string{"prepare": "false", "test": "false"})
	f.addScripts(t, "gyp", "1.0.0", Manifest{}, map[string]string{"install": "node-gyp rebuild"})
	return f
}

// TestFullDocumentsGiveTheSameLock: a registry that answers with full
// package documents (no hasInstallScript; the scripts themselves) gives the
// lock the abbreviated form gives, install scripts included, which npm ci
// needs to run them.
func TestFullDocumentsGiveTheSameLock(t *testing.T) {
	var locks [2][]byte
	for i, full := range []bool{false, true} {
		srv := scriptsRegistry(t, full, true).serve(t)
		c := NewClient(Options{Registry: srv.URL})
		tree, err := Resolve(context.Background(), c, "@acme/cli", "1.0.0", Platform{})
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]bool{"node_modules/@acme/cli": true, "node_modules/pre": true,
			"node_modules/gyp": true, "node_modules/plain": false} {
			if got := tree.Packages[p].HasInstallScript; got != want {
				t.Errorf("full=%v: %s has an install script: %v, want %v", full, p, got, want)
			}
		}
		locks[i] = tree.PackageLock("test")
	}
	if !bytes.Equal(locks[0], locks[1]) {
		t.Errorf("the locks differ:\nabbreviated:\n%s\nfull:\n%s", locks[0], locks[1])
	}
}

// TestNPMCIRunsInstallScriptsOfAFullDocument: npm ci, from the lock a full
// document gave, runs the CLI's postinstall and a dependency's preinstall.
func TestNPMCIRunsInstallScriptsOfAFullDocument(t *testing.T) {
	f := scriptsRegistry(t, true, false)
	srv := f.serve(t)
	tree, err := Resolve(context.Background(), NewClient(Options{Registry: srv.URL}), "@acme/cli", "1.0.0", Platform{})
	if err != nil {
		t.Fatal(err)
	}
	dir, out, err := npmCI(t, tree, srv.URL)
	if err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	for _, p := range []string{"node_modules/@acme/cli/postinstall-ran", "node_modules/pre/preinstall-ran"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("the install script did not run: %v\n%s", err, out)
		}
	}
}

// TestParseFullManifest: fields a full document may write in other forms.
func TestParseFullManifest(t *testing.T) {
	p, err := ParsePackument("x", []byte(`{"name":"x","versions":{"1.0.0":{"version":"1.0.0",
		"os":"linux","cpu":["x64"],"libc":null,"engines":{"node":">=20 "},
		"scripts":{"install":"","postinstall":"node i.js"}},
		"2.0.0":{"version":"2.0.0","os":"","engines":["node >= 0.6"],"scripts":{"prepare":"x","install":false}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := p.Versions["1.0.0"]
	if len(m.OS) != 1 || m.OS[0] != "linux" || m.Libc != nil || m.NodeEngine() != ">=20" || !m.installScript() {
		t.Errorf("1.0.0: %+v, engine %q, install script %v", m, m.NodeEngine(), m.installScript())
	}
	m = p.Versions["2.0.0"]
	if m.OS != nil || m.NodeEngine() != "" || m.installScript() {
		t.Errorf("2.0.0: %+v, engine %q, install script %v", m, m.NodeEngine(), m.installScript())
	}
}
