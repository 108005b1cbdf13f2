// Command registry serves the end-to-end test's registries on this machine:
// go-containerregistry's in-process container registry (docker push and
// pull, and `agentbox bump` resolving real digests), and optionally a fake
// npm registry that serves one package at one version, so that the agent
// image's `npm install --global PACKAGE@VERSION` runs its real install path.
//
//	go run ./internal/e2e/registry -addr 127.0.0.1:5000
//	go run ./internal/e2e/registry -addr 127.0.0.1:5000 \
//	    -npm-addr 127.0.0.1:4873 -npm-package @anthropic-ai/claude-code=1.0.0 [-npm-tarball pkg.tgz]
//
// Docker talks plain HTTP to registries on 127.0.0.0/8 without any
// configuration. The npm registry answers GET /NAME (also /@scope%2fname)
// with a package document whose dist-tags.latest is VERSION and whose
// versions[VERSION].dist.tarball points back at this server, through the
// address the client used (the Host header), so the same server works for
// the host and for build containers that reach it through the Docker bridge.
// Without -npm-tarball it serves a generated package: a package.json and a
// bin script (node) that prints VERSION.
//
// Once both listen, it prints one line per registry on stdout
// ("registry 127.0.0.1:5000", "npm http://127.0.0.1:4873/") and runs until
// SIGINT or SIGTERM.
package main

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
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("e2e-registry: ")
	if err := run(os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:5000", "listen address of the container registry (empty: none)")
	blobsDir := fs.String("blobs-dir", "", "keep blobs in this directory instead of memory")
	npmAddr := fs.String("npm-addr", "", "listen address of the fake npm registry (empty: none)")
	npmSpec := fs.String("npm-package", "", "the npm package it serves, NAME=VERSION")
	npmTarball := fs.String("npm-tarball", "", "the package tarball (.tgz) to serve (default: a generated one)")
	npmBin := fs.String("npm-bin", "", "the command of the generated package (default: the agent's command, or the package's base name)")
	verbose := fs.Bool("v", false, "log every request on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *addr == "" && *npmAddr == "" {
		return errors.New("nothing to serve: -addr and -npm-addr are both empty")
	}

	var servers []*http.Server
	errc := make(chan error, 2)
	serve := func(what, listen string, h http.Handler) (net.Addr, error) {
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if *verbose {
			h = logRequests(what, h)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s: %w", what, err)
			}
		}()
		return ln.Addr(), nil
	}

	// The npm package first: a bad flag changes nothing.
	var pkg *npmPackage
	if *npmAddr != "" {
		var err error
		if pkg, err = newNPMPackage(*npmSpec, *npmTarball, *npmBin); err != nil {
			return err
		}
	} else if *npmSpec != "" || *npmTarball != "" || *npmBin != "" {
		return errors.New("-npm-package, -npm-tarball and -npm-bin need -npm-addr")
	}

	var lines []string
	if *addr != "" {
		h, err := registryHandler(*blobsDir)
		if err != nil {
			return err
		}
		a, err := serve("registry", *addr, h)
		if err != nil {
			return err
		}
		lines = append(lines, "registry "+a.String())
	}
	if pkg != nil {
		a, err := serve("npm", *npmAddr, pkg)
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("npm http://%s/", a))
		log.Printf("npm: serving %s@%s (%d bytes, %s)", pkg.name, pkg.version, len(pkg.tarball), pkg.integrity)
	}
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}

	return serveUntilSignal(servers, errc)
}

// registryHandler is the container registry, its blobs in memory or in
// blobsDir. -v logs every request (logRequests); the registry's own log
// would repeat them.
func registryHandler(blobsDir string) (http.Handler, error) {
	opts := []registry.Option{registry.Logger(log.New(io.Discard, "", 0))}
	if blobsDir != "" {
		if err := os.MkdirAll(blobsDir, 0o755); err != nil {
			return nil, err
		}
		opts = append(opts, registry.WithBlobHandler(registry.NewDiskBlobHandler(blobsDir)))
	}
	return registry.New(opts...), nil
}

// serveUntilSignal waits for SIGINT or SIGTERM, or a server's failure, and
// then shuts the servers down.
func serveUntilSignal(servers []*http.Server, errc <-chan error) error {
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	var err error
	select {
	case s := <-sigc:
		log.Printf("%s: stopping", s)
	case err = <-errc:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(ctx)
	}
	return err
}

func logRequests(what string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		log.Printf("%s: %s %s %s -> %d", what, r.RemoteAddr, r.Method, r.URL.RequestURI(), rec.code)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// --- the fake npm registry ---------------------------------------------------

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

type npmPackage struct {
	name, version string
	tarball       []byte
	shasum        string // sha1, hex
	integrity     string // sha512, SRI
	file          string // the tarball's file name: BASE-VERSION.tgz
}

func newNPMPackage(spec, tarballPath, bin string) (*npmPackage, error) {
	i := strings.LastIndex(spec, "=")
	if i <= 0 {
		return nil, fmt.Errorf("-npm-package %q: want NAME=VERSION", spec)
	}
	p := &npmPackage{name: spec[:i], version: spec[i+1:]}
	if !npmName.MatchString(p.name) {
		return nil, fmt.Errorf("-npm-package: invalid npm package name %q", p.name)
	}
	if !npmVersion.MatchString(p.version) {
		return nil, fmt.Errorf("-npm-package: invalid version %q (want 1.2.3)", p.version)
	}
	base := path.Base(p.name)
	p.file = base + "-" + p.version + ".tgz"
	if tarballPath != "" {
		b, err := os.ReadFile(tarballPath)
		if err != nil {
			return nil, err
		}
		p.tarball = b
	} else {
		if bin == "" {
			bin = agentCommands[p.name]
		}
		if bin == "" {
			bin = base
		}
		b, err := fakeTarball(p.name, p.version, bin)
		if err != nil {
			return nil, err
		}
		p.tarball = b
	}
	s1 := sha1.Sum(p.tarball)
	s512 := sha512.Sum512(p.tarball)
	p.shasum = hex.EncodeToString(s1[:])
	p.integrity = "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
	return p, nil
}

// fakeTarball makes an npm package tarball (gzipped tar, files under
// package/) with a bin script that prints the version.
func fakeTarball(name, version, bin string) ([]byte, error) {
	manifest, err := json.MarshalIndent(map[string]any{
		"name":        name,
		"version":     version,
		"description": "agentbox end-to-end test stand-in for " + name,
		"license":     "MIT",
		"bin":         map[string]string{bin: "cli.js"},
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	cli := fmt.Sprintf("#!/usr/bin/env node\n// agentbox end-to-end test stand-in for %s.\nconsole.log(%q);\n", name, version+" (agentbox e2e stand-in)")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	// npm's own packer uses this fixed time for every entry.
	mtime := time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{
		{"package/package.json", 0o644, append(manifest, '\n')},
		{"package/cli.js", 0o755, []byte(cli)},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ServeHTTP answers the package document at /NAME (npm asks for
// /@scope%2fname) and the tarball at /NAME/-/FILE; 404 for anything else.
func (p *npmPackage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return
	}
	// EscapedPath keeps %2f; unescape it ourselves so that both forms match.
	p0, err := url.PathUnescape(r.URL.EscapedPath())
	if err != nil {
		http.Error(w, `{"error":"bad path"}`, http.StatusBadRequest)
		return
	}
	p0 = strings.TrimPrefix(p0, "/")
	switch p0 {
	case p.name, p.name + "/":
		p.serveDocument(w, r)
	case p.name + "/-/" + p.file:
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, p.file, time.Time{}, bytes.NewReader(p.tarball))
	case p.name + "/" + p.version:
		writeJSON(w, r, p.versionDoc(r))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"not found"}`)
	}
}

func (p *npmPackage) versionDoc(r *http.Request) map[string]any {
	return map[string]any{
		"name":    p.name,
		"version": p.version,
		"_id":     p.name + "@" + p.version,
		"dist": map[string]any{
			"tarball":   "http://" + r.Host + "/" + p.name + "/-/" + p.file,
			"shasum":    p.shasum,
			"integrity": p.integrity,
		},
	}
}

func (p *npmPackage) serveDocument(w http.ResponseWriter, r *http.Request) {
	v := p.versionDoc(r)
	// the bin entry of the manifest, so that abbreviated documents are
	// complete; read from the tarball when possible.
	if bin := tarballBin(p.tarball); bin != nil {
		v["bin"] = bin
	}
	writeJSON(w, r, map[string]any{
		"_id":       p.name,
		"name":      p.name,
		"dist-tags": map[string]string{"latest": p.version},
		"versions":  map[string]any{p.version: v},
		"time": map[string]string{
			"created":  "2020-01-01T00:00:00.000Z",
			"modified": "2020-01-01T00:00:00.000Z",
			p.version:  "2020-01-01T00:00:00.000Z",
		},
		"modified": "2020-01-01T00:00:00.000Z",
	})
}

// tarballBin reads package/package.json's bin from a package tarball.
func tarballBin(tgz []byte) any {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil
		}
		if h.Name != "package/package.json" {
			continue
		}
		var m struct {
			Bin any `json:"bin"`
		}
		if json.NewDecoder(tr).Decode(&m) != nil {
			return nil
		}
		return m.Bin
	}
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}
