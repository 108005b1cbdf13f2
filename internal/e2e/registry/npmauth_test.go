package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -npm-token and -npm-tls-ca: the npm stand-in over TLS with a test CA's
// certificate, answering 401 without the token; tarball URLs say https.
func TestNPMTokenAndTLS(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	c, err := parseFlags([]string{"-addr", "", "-npm-addr", "127.0.0.1:0", "-npm-package", "pkg=1.0.0",
		"-npm-token", "tok", "-npm-tls-ca", caFile})
	if err != nil {
		t.Fatal(err)
	}
	s, err := start(c)
	defer s.shutdown()
	if err != nil {
		t.Fatal(err)
	}
	u, ok := strings.CutPrefix(s.lines[0], "npm ")
	if !ok || !strings.HasPrefix(u, "https://127.0.0.1:") {
		t.Fatalf("line %q", s.lines[0])
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if _, err := http.Get(u + "pkg"); err == nil {
		t.Error("a client without the test CA trusted the server")
	}
	fetch := func(token string) (int, string) {
		req, _ := http.NewRequest("GET", u+"pkg", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := trusting.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := fetch(""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code, _ := fetch("other"); code != http.StatusUnauthorized {
		t.Errorf("with another token: %d, want 401", code)
	}
	code, body := fetch("tok")
	if code != http.StatusOK || !strings.Contains(body, `"tarball":"`+u+"pkg/-/") {
		t.Errorf("with the token: %d %s", code, body)
	}
}
