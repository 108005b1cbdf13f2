package netlab

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// TLSServer serves HTTPS on Listen with the certificate that Certs holds
// for the ClientHello's SNI (none: the handshake fails). Every request is
// recorded (an "https" event: Name the Host header, SNI, Headers the
// credential headers it carried) and answered with a stream of server-sent
// events: "data: first", flushed, then after Hold "data: last". With Git,
// it is a git forge instead: git http-backend serves the repositories
// under that directory (GIT_PROJECT_ROOT, every one exported).
type TLSServer struct {
	Listen string             `json:"listen"`
	Certs  map[string]TLSCert `json:"certs"` // by SNI
	Hold   time.Duration      `json:"hold"`
	Git    string             `json:"git,omitempty"`
}

// TLSCert is a certificate chain and its key, in PEM.
type TLSCert struct {
	Cert []byte `json:"cert"`
	Key  []byte `json:"key"`
}

// CredentialHeaders are the headers an "https" event records.
var CredentialHeaders = []string{"Api-Key", "Authorization", "X-Api-Key", "X-Goog-Api-Key"}

func (s *server) startTLS(c TLSServer) error {
	certs := map[string]tls.Certificate{}
	for name, pem := range c.Certs {
		cert, err := tls.X509KeyPair(pem.Cert, pem.Key)
		if err != nil {
			return fmt.Errorf("the certificate of %s: %w", name, err)
		}
		certs[name] = cert
	}
	ln, err := net.Listen(tcpNet(c.Listen), c.Listen)
	if err != nil {
		return err
	}
	cfg := &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if cert, ok := certs[h.ServerName]; ok {
			return &cert, nil
		}
		return nil, fmt.Errorf("no certificate for %q", h.ServerName)
	}}
	handler := func(w http.ResponseWriter, r *http.Request) { s.serveSSE(w, r, c.Hold) }
	if c.Git != "" {
		backend := GitBackend(c.Git)
		handler = func(w http.ResponseWriter, r *http.Request) {
			s.record(requestEvent(r))
			backend(w, r)
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(handler), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(tls.NewListener(ln, cfg)) }()
	return nil
}

func (s *server) serveSSE(w http.ResponseWriter, r *http.Request, hold time.Duration) {
	s.record(requestEvent(r))
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: first\n\n")
	w.(http.Flusher).Flush()
	time.Sleep(hold)
	fmt.Fprint(w, "data: last\n\n")
}

// requestEvent is the "https" event of request r.
func requestEvent(r *http.Request) Event {
	local := "?"
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		local = a.String()
	}
	e := Event{Kind: "https", Local: local, Remote: r.RemoteAddr, Name: r.Host, Path: r.URL.Path, Headers: map[string]string{}}
	if r.TLS != nil {
		e.SNI = r.TLS.ServerName
	}
	for _, h := range CredentialHeaders {
		if v := r.Header.Values(h); len(v) > 0 {
			e.Headers[h] = fmt.Sprint(v)
		}
	}
	if r.URL.RawQuery != "" {
		e.Path += "?" + r.URL.RawQuery
	}
	return e
}
