// Command fakenet is the end-to-end test's fake "internet": the hosts the
// test runs on its own Docker network (198.18.0.0/24). The test builds it
// with CGO_ENABLED=0 and copies it into an image made FROM the local Debian
// base image, so that nothing is pulled.
//
//	fakenet dns -listen :53 -a allowed.e2e.test=198.18.0.80 -default 198.18.0.99 -many big.allowed.e2e.test=100
//	fakenet http -listen :80 -dir /srv -name web
//	fakenet git -listen :443 -cert /tls/cert.pem -key /tls/key.pem -root /repos -token TOKEN -private team/private
//
// dns answers A queries over UDP and TCP: a name given with -many (and every
// name below it) gets that many addresses (198.18.1.1 on), a name given
// with -a (and every name below it) its address, every other name the -default address (or
// NXDOMAIN without one); other query types get an empty NOERROR answer.
// Over UDP an answer larger than the asker takes (512 bytes, or its EDNS0
// size) goes out truncated (TC set), as real servers do: the asker must
// ask again over TCP.
// That the fake upstream answers every name is the point: an unlisted name
// that does not resolve in the sandbox was stopped by the sandbox's filter.
//
// http serves the files of -dir. git is a forge: git http-backend (the
// image's /usr/bin/git) serves the bare repositories under -root over TLS,
// as a forge does: a push, or any request for a repository of -private,
// needs the Basic credential x-access-token:TOKEN (401 without it). Each
// logs one line per query or request on stdout ("dns REMOTE NAME TYPE ->
// ANSWER", "http NAME REMOTE METHOD PATH STATUS", "git SNI REMOTE METHOD
// PATH?QUERY auth=token|other|none STATUS"), which the test reads with
// docker logs.
package main

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/dnswire"
	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("fakenet: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: fakenet dns|http|git [flags]")
	}
	var err error
	switch os.Args[1] {
	case "dns":
		err = runDNS(os.Args[2:])
	case "http":
		err = runHTTP(os.Args[2:])
	case "git":
		err = runGit(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (dns, http, git)", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

// out serializes the log lines of concurrent handlers.
var out = struct {
	sync.Mutex
	io.Writer
}{Writer: os.Stdout}

func logf(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(out.Writer, format+"\n", args...)
}

// --- DNS ----------------------------------------------------------------------

type records map[string]netip.Addr

func (r records) String() string { return fmt.Sprint(map[string]netip.Addr(r)) }

func (r records) Set(s string) error {
	name, addr, ok := strings.Cut(s, "=")
	a, err := netip.ParseAddr(addr)
	if !ok || err != nil || !a.Is4() || name == "" {
		return fmt.Errorf("want NAME=IPv4, got %q", s)
	}
	r[strings.ToLower(strings.TrimSuffix(name, "."))] = a
	return nil
}

// many are the names with large answers: NAME=COUNT.
type many map[string]int

func (m many) String() string { return fmt.Sprint(map[string]int(m)) }

func (m many) Set(s string) error {
	name, count, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 || n > 250 || name == "" {
		return fmt.Errorf("want NAME=COUNT (1-250), got %q", s)
	}
	m[strings.ToLower(strings.TrimSuffix(name, "."))] = n
	return nil
}

type dnsServer struct {
	records records
	many    many
	def     netip.Addr // zero: NXDOMAIN
}

func runDNS(args []string) error {
	fs := flag.NewFlagSet("dns", flag.ContinueOnError)
	listen := fs.String("listen", ":53", "UDP and TCP listen address")
	s := &dnsServer{records: records{}, many: many{}}
	fs.Var(s.records, "a", "NAME=IPv4: the A record of NAME and every name below it (repeatable)")
	fs.Var(s.many, "many", "NAME=COUNT: COUNT A records, 198.18.1.1 on, for NAME and every name below it (repeatable)")
	def := fs.String("default", "", "the address every other name gets (empty: NXDOMAIN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *def != "" {
		a, err := netip.ParseAddr(*def)
		if err != nil || !a.Is4() {
			return fmt.Errorf("-default: want an IPv4 address, got %q", *def)
		}
		s.def = a
	}
	pc, err := net.ListenPacket("udp", *listen)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	logf("dns listening on %s (udp, tcp)", *listen)
	errc := make(chan error, 2)
	go func() { errc <- s.serveUDP(pc) }()
	go func() { errc <- s.serveTCP(ln) }()
	return <-errc
}

func (s *dnsServer) serveUDP(pc net.PacketConn) error {
	buf := make([]byte, 4096)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		if reply := s.answer(buf[:n], "udp", from); reply != nil {
			_, _ = pc.WriteTo(reply, from)
		}
	}
}

func (s *dnsServer) serveTCP(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			for {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				msg := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				reply := s.answer(msg, "tcp", c.RemoteAddr())
				if reply == nil {
					return
				}
				if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(reply))), reply...)); err != nil {
					return
				}
			}
		}()
	}
}

const (
	typeA    = 1
	typeAAAA = 28
)

var typeNames = map[uint16]string{typeA: "A", typeAAAA: "AAAA", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 33: "SRV", 65: "HTTPS"}

func typeName(t uint16) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("TYPE%d", t)
}

// answer builds the reply to one query, or nil for a message it ignores.
func (s *dnsServer) answer(msg []byte, network string, from net.Addr) []byte {
	q, err := dnswire.ParseQuery(msg)
	if err != nil {
		logf("dns %s %s: bad query: %v", network, from, err)
		return nil
	}
	rcode := dnswire.RcodeSuccess
	var answers []dnswire.Answer
	what := "NOERROR (no answer)"
	if n, ok := below(s.many, q.Name); ok {
		if q.Type == typeA {
			for i := 1; i <= n; i++ {
				answers = append(answers, dnswire.Answer{Type: dnswire.TypeA, TTL: 5, Value: fmt.Sprintf("198.18.1.%d", i)})
			}
			what = fmt.Sprintf("%d addresses", n)
		}
	} else if a, ok := s.lookup(q.Name); !ok {
		rcode, what = dnswire.RcodeNXDomain, "NXDOMAIN"
	} else if q.Type == typeA {
		answers = []dnswire.Answer{{Type: dnswire.TypeA, TTL: 5, Value: a.String()}}
		what = a.String()
	}
	reply, err := dnswire.BuildReply(q, rcode, answers)
	if err == nil && network == "udp" {
		full := len(reply)
		if reply, err = dnswire.ForUDP(q, reply); err == nil && len(reply) < full {
			what += fmt.Sprintf(", truncated (%d bytes, UDP size %d)", full, q.UDPSize)
		}
	}
	if err != nil {
		logf("dns %s %s: %v", network, from, err)
		return nil
	}
	logf("dns %s %s %s %s -> %s", network, from, q.Name, typeName(q.Type), what)
	return reply
}

func (s *dnsServer) lookup(name string) (netip.Addr, bool) {
	if a, ok := below(s.records, name); ok {
		return a, true
	}
	return s.def, s.def.IsValid()
}

// below returns the value of name, or of the nearest name above it, in m.
func below[V any](m map[string]V, name string) (V, bool) {
	for n := name; n != ""; {
		if v, ok := m[n]; ok {
			return v, true
		}
		_, rest, ok := strings.Cut(n, ".")
		if !ok {
			break
		}
		n = rest
	}
	var zero V
	return zero, false
}

// --- HTTP ---------------------------------------------------------------------

func runHTTP(args []string) error {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	listen := fs.String("listen", ":80", "TCP listen address")
	dir := fs.String("dir", "/srv", "the directory to serve")
	name := fs.String("name", "web", "this host's name in the log")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files := http.FileServer(http.Dir(*dir))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &status{ResponseWriter: w, code: http.StatusOK}
		w.Header().Set("X-Fakenet-Host", *name)
		files.ServeHTTP(rec, r)
		logf("http %s %s %s %s %d", *name, r.RemoteAddr, r.Method, r.URL.Path, rec.code)
	})
	logf("http %s listening on %s, serving %s", *name, *listen, *dir)
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

type status struct {
	http.ResponseWriter
	code int
}

func (s *status) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// --- git ----------------------------------------------------------------------

func runGit(args []string) error {
	fs := flag.NewFlagSet("git", flag.ContinueOnError)
	listen := fs.String("listen", ":443", "TCP listen address (TLS)")
	certFile := fs.String("cert", "", "the server's certificate chain (PEM)")
	keyFile := fs.String("key", "", "the server's key (PEM)")
	root := fs.String("root", "/repos", "the bare repositories, OWNER/NAME.git")
	token := fs.String("token", "", "the token a push or a private repository needs")
	private := fs.String("private", "", "repositories (OWNER/NAME, comma-separated) that only the token reads")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *token == "" {
		return errors.New("-token is required")
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+*token))
	backend := netlab.GitBackend(*root)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &status{ResponseWriter: w, code: http.StatusOK}
		auth := "none"
		if got := r.Header.Get("Authorization"); got == want {
			auth = "token"
		} else if got != "" {
			auth = "other"
		}
		push := strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
		secret := false
		for _, repo := range strings.Split(*private, ",") {
			secret = secret || repo != "" && strings.HasPrefix(r.URL.Path, "/"+repo+".git/")
		}
		if (push || secret) && auth != "token" {
			rec.Header().Set("WWW-Authenticate", `Basic realm="fakenet"`)
			http.Error(rec, "authentication required", http.StatusUnauthorized)
		} else {
			backend(rec, r)
		}
		logf("git %s %s %s %s?%s auth=%s %d", r.TLS.ServerName, r.RemoteAddr, r.Method, r.URL.Path, r.URL.RawQuery, auth, rec.code)
	})
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		return err
	}
	logf("git listening on %s, serving %s", *listen, *root)
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	return srv.ListenAndServeTLS("", "")
}
