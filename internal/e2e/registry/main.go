// Command registry serves the end-to-end test's registries on this machine:
// go-containerregistry's in-process container registry (docker push and
// pull, and `agentbox bump` resolving real digests), optionally a fake npm
// registry, so that the agent image's npm install runs its real install
// path, and optionally a stand-in for Debian's snapshot archive.
//
//	go run ./internal/e2e/registry -addr 127.0.0.1:5000
//	go run ./internal/e2e/registry -addr 127.0.0.1:5000 \
//	    -npm-addr 127.0.0.1:4873 -npm-package @anthropic-ai/claude-code=1.0.0 [-npm-tarball pkg.tgz]
//	go run ./internal/e2e/registry -addr '' -npm-addr 127.0.0.1:4873 \
//	    -npm-package @anthropic-ai/claude-code=1.0.0 -npm-tree [-npm-tamper agentbox-e2e-b@2.1.3]
//	go run ./internal/e2e/registry -addr '' -debian-addr 127.0.0.1:4874
//
// Docker talks plain HTTP to registries on 127.0.0.0/8 without any
// configuration. The npm registry answers GET /NAME (also /@scope%2fname)
// with a package document, full or abbreviated (Accept:
// application/vnd.npm.install-v1+json), whose tarball URLs point back at
// this server through the address the client used (the Host header), so the
// same server works for the host and for build containers that reach it
// through the Docker bridge. Without -npm-tarball it serves a generated
// package: a package.json and a bin script (node) that prints VERSION.
//
// -npm-tree adds a generated dependency tree (tree.go): the main package
// depends on it, and its bin script prints a second line with the versions
// of the tree it finds installed. -npm-tamper NAME@VERSION, or at run time
// POST /-/agentbox-e2e/tamper?pkg=NAME@VERSION, makes the registry serve
// other bytes for that version's tarball (and its document the new
// integrity), so that a lock file made before no longer matches.
//
// -npm-token TOKEN makes the npm registry answer 401 to every request
// without "Authorization: Bearer TOKEN"; -npm-tls-ca FILE serves it over
// TLS with a certificate of a new test CA (a proxy that intercepts TLS),
// whose certificate it writes to FILE.
//
// -debian-addr serves /debian/TS/PATH and /debian-security/TS/PATH (TS as in
// 20250520T000000Z) from the machine's own apt mirrors (debian.go), and the
// same as a plain mirror: /plain/debian/PATH and /plain/debian-security/PATH.
//
// Once all listen, it prints one line per server on stdout ("registry
// 127.0.0.1:5000", "npm http://127.0.0.1:4873/", "debian
// http://127.0.0.1:4874/") and runs until SIGINT or SIGTERM. -v logs every
// request on stderr.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/testca"
	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("e2e-registry: ")
	if err := run(os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// config is the command line.
type config struct {
	addr, blobsDir                       string
	npmAddr, npmSpec, npmTarball, npmBin string
	npmTree                              bool
	npmTamper                            string
	npmToken, npmTLSCA                   string
	debianAddr, debianMirror             string
	debianSecurityMirror, aptDir         string
	verbose                              bool
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:5000", "listen address of the container registry (empty: none)")
	fs.StringVar(&c.blobsDir, "blobs-dir", "", "keep blobs in this directory instead of memory")
	fs.StringVar(&c.npmAddr, "npm-addr", "", "listen address of the fake npm registry (empty: none)")
	fs.StringVar(&c.npmSpec, "npm-package", "", "the npm package it serves, NAME=VERSION")
	fs.StringVar(&c.npmTarball, "npm-tarball", "", "the package tarball (.tgz) to serve (default: a generated one)")
	fs.StringVar(&c.npmBin, "npm-bin", "", "the command of the generated package (default: the agent's command, or the package's base name)")
	fs.BoolVar(&c.npmTree, "npm-tree", false, "also serve a generated dependency tree that the package depends on")
	fs.StringVar(&c.npmTamper, "npm-tamper", "", "serve changed tarball bytes for NAME@VERSION from the start")
	fs.StringVar(&c.npmToken, "npm-token", "", "answer 401 to npm requests without \"Authorization: Bearer TOKEN\"")
	fs.StringVar(&c.npmTLSCA, "npm-tls-ca", "", "serve npm over TLS with a certificate of a new test CA, whose certificate it writes to this file")
	fs.StringVar(&c.debianAddr, "debian-addr", "", "listen address of the Debian snapshot stand-in (empty: none)")
	fs.StringVar(&c.debianMirror, "debian-mirror", "", "the Debian mirror to proxy (default: from apt's sources)")
	fs.StringVar(&c.debianSecurityMirror, "debian-security-mirror", "", "the Debian security mirror to proxy (default: from apt's sources)")
	fs.StringVar(&c.aptDir, "apt-dir", "/etc/apt", "where apt's sources.list and sources.list.d are")
	fs.BoolVar(&c.verbose, "v", false, "log every request on stderr")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.addr == "" && c.npmAddr == "" && c.debianAddr == "" {
		return c, errors.New("nothing to serve: -addr, -npm-addr and -debian-addr are all empty")
	}
	if c.npmAddr == "" && (c.npmSpec != "" || c.npmTarball != "" || c.npmBin != "" || c.npmTree || c.npmTamper != "" || c.npmToken != "" || c.npmTLSCA != "") {
		return c, errors.New("-npm-package, -npm-tarball, -npm-bin, -npm-tree, -npm-tamper, -npm-token and -npm-tls-ca need -npm-addr")
	}
	if c.npmTree && c.npmTarball != "" {
		return c, errors.New("-npm-tree serves a generated package: it excludes -npm-tarball")
	}
	if c.debianAddr == "" && (c.debianMirror != "" || c.debianSecurityMirror != "") {
		return c, errors.New("-debian-mirror and -debian-security-mirror need -debian-addr")
	}
	return c, nil
}

func run(args []string, stdout io.Writer) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	s, err := start(c)
	if err != nil {
		s.shutdown()
		return err
	}
	for _, l := range s.lines {
		fmt.Fprintln(stdout, l)
	}
	return serveUntilSignal(s)
}

// servers are the running servers.
type servers struct {
	all   []*http.Server
	lines []string // one per server, for stdout
	errc  chan error
}

// handlers builds every handler first: a bad flag starts nothing.
func handlers(c config) (reg, npm, debian http.Handler, err error) {
	if c.addr != "" {
		if reg, err = registryHandler(c.blobsDir); err != nil {
			return nil, nil, nil, err
		}
	}
	if c.npmAddr != "" {
		if npm, err = npmHandler(c); err != nil {
			return nil, nil, nil, err
		}
		if c.npmToken != "" {
			npm = requireToken(c.npmToken, npm)
		}
	}
	if c.debianAddr != "" {
		if debian, err = debianHandler(c); err != nil {
			return nil, nil, nil, err
		}
	}
	return reg, npm, debian, nil
}

// start listens and serves every configured server.
func start(c config) (*servers, error) {
	s := &servers{errc: make(chan error, 3)}
	reg, npm, debian, err := handlers(c)
	if err != nil {
		return s, err
	}
	npmTLS, err := npmTLSConfig(c.npmTLSCA)
	if err != nil {
		return s, err
	}
	npmLine := "npm http://%s/"
	if npmTLS != nil {
		npmLine = "npm https://%s/"
	}
	for _, srv := range []struct {
		what, addr, line string
		h                http.Handler
		tls              *tls.Config
	}{
		{"registry", c.addr, "registry %s", reg, nil},
		{"npm", c.npmAddr, npmLine, npm, npmTLS},
		{"debian", c.debianAddr, "debian http://%s/", debian, nil},
	} {
		if srv.h == nil {
			continue
		}
		a, err := s.serve(srv.what, srv.addr, srv.h, srv.tls, c.verbose)
		if err != nil {
			return s, err
		}
		s.lines = append(s.lines, fmt.Sprintf(srv.line, a))
	}
	return s, nil
}

func (s *servers) serve(what, listen string, h http.Handler, tlsConf *tls.Config, verbose bool) (net.Addr, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	if verbose {
		h = logRequests(what, h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	s.all = append(s.all, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errc <- fmt.Errorf("%s: %w", what, err)
		}
	}()
	return ln.Addr(), nil
}

// npmTLSConfig makes a test CA, writes its certificate to caFile and
// returns a TLS configuration with a certificate it signed for every
// address of this machine (build containers reach the server on the
// Docker bridge's); nil for caFile "".
func npmTLSConfig(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	ca, err := testca.New()
	if err != nil {
		return nil, err
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ips = append(ips, n.IP)
		}
	}
	cert, err := ca.Server(ips, "localhost")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		return nil, fmt.Errorf("-npm-tls-ca: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// npmHandler is the fake npm registry: one package, or the tree.
func npmHandler(c config) (*npmRegistry, error) {
	var g *npmRegistry
	if c.npmTree {
		var err error
		if g, err = newNPMTree(c.npmSpec, c.npmBin); err != nil {
			return nil, err
		}
	} else {
		p, err := newNPMPackage(c.npmSpec, c.npmTarball, c.npmBin)
		if err != nil {
			return nil, err
		}
		g = newNPMRegistry(p)
	}
	if c.npmTamper != "" {
		if _, err := g.tamperSpec(c.npmTamper); err != nil {
			return nil, fmt.Errorf("-npm-tamper %w", err)
		}
	}
	for _, name := range sortedKeys(g.packages) {
		for _, p := range g.packages[name] {
			log.Printf("npm: serving %s@%s (%d bytes, %s)", p.name, p.version, len(p.tarball), p.integrity)
		}
	}
	return g, nil
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
func serveUntilSignal(s *servers) error {
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	var err error
	select {
	case sig := <-sigc:
		log.Printf("%s: stopping", sig)
	case err = <-s.errc:
	}
	s.shutdown()
	return err
}

func (s *servers) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.all {
		_ = srv.Shutdown(ctx)
	}
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
