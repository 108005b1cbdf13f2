package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestNPMPackage checks what npm relies on: the package document at both
// spellings of a scoped name, dist-tags.latest, a tarball URL on the address
// the client used, and a tarball that matches its shasum and integrity.
func TestNPMPackage(t *testing.T) {
	pkg, err := newNPMPackage("@anthropic-ai/claude-code=1.2.3", "", "")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newNPMRegistry(pkg))
	defer srv.Close()

	var doc struct {
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]struct {
			Bin  map[string]string `json:"bin"`
			Dist struct {
				Tarball, Shasum, Integrity string
			} `json:"dist"`
		} `json:"versions"`
	}
	for _, p := range []string{"/@anthropic-ai%2fclaude-code", "/@anthropic-ai%2Fclaude-code", "/@anthropic-ai/claude-code"} {
		code, body := get(t, srv.URL+p)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", p, code)
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
	}
	if doc.DistTags["latest"] != "1.2.3" {
		t.Fatalf("dist-tags: %v", doc.DistTags)
	}
	v := doc.Versions["1.2.3"]
	if v.Bin["claude"] != "cli.js" {
		t.Errorf("bin: %v, want claude: cli.js", v.Bin)
	}
	if want := srv.URL + "/@anthropic-ai/claude-code/-/claude-code-1.2.3.tgz"; v.Dist.Tarball != want {
		t.Fatalf("tarball %q, want %q", v.Dist.Tarball, want)
	}
	code, tgz := get(t, v.Dist.Tarball)
	if code != http.StatusOK {
		t.Fatalf("GET tarball: %d", code)
	}
	s1, s512 := sha1.Sum(tgz), sha512.Sum512(tgz)
	if got := hex.EncodeToString(s1[:]); got != v.Dist.Shasum {
		t.Errorf("shasum %s, tarball's %s", v.Dist.Shasum, got)
	}
	if got := "sha512-" + base64.StdEncoding.EncodeToString(s512[:]); got != v.Dist.Integrity {
		t.Errorf("integrity %s, tarball's %s", v.Dist.Integrity, got)
	}

	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
		if h.Name == "package/cli.js" && h.Mode&0o111 == 0 {
			t.Errorf("cli.js mode %o: not executable", h.Mode)
		}
	}
	if !strings.Contains(files["package/cli.js"], "1.2.3") || !strings.HasPrefix(files["package/cli.js"], "#!/usr/bin/env node\n") {
		t.Errorf("cli.js:\n%s", files["package/cli.js"])
	}
	if !strings.Contains(files["package/package.json"], `"version": "1.2.3"`) {
		t.Errorf("package.json:\n%s", files["package/package.json"])
	}

	for _, p := range []string{"/other", "/@anthropic-ai/claude-code/-/claude-code-9.9.9.tgz", "/-/npm/v1/security/advisories/bulk"} {
		if code, _ := get(t, srv.URL+p); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
}

func TestNPMPackageFlags(t *testing.T) {
	for _, spec := range []string{"", "x", "=1.0.0", "Bad=1.0.0", "x=latest", "x=1.0", "x y=1.0.0"} {
		if _, err := newNPMPackage(spec, "", ""); err == nil {
			t.Errorf("-npm-package %q: no error", spec)
		}
	}
	p, err := newNPMPackage("left-pad=1.0.0-rc.1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if bin, ok := tarballBin(p.tarball).(map[string]any); !ok || bin["left-pad"] != "cli.js" {
		t.Errorf("bin of a package outside the catalog: %v", tarballBin(p.tarball))
	}
}
