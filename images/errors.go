package images

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// The wording of errors: one line for users that names what went wrong,
// for the registry resolver and the npm client alike.

// describe says in one line what went wrong with ref.
func (r *RegistryResolver) describe(parent context.Context, ref Ref, nref name.Reference, err error) string {
	if s := contextError(parent, err, r.timeout); s != "" {
		return s
	}
	if errors.Is(err, errMalformed) {
		return "malformed response: the registry sent no usable digest and its answer to GET is not a manifest"
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		if isPing(terr) && terr.StatusCode == http.StatusNotFound {
			return "not a container registry (GET /v2/ answered http 404)"
		}
		switch terr.StatusCode {
		case http.StatusNotFound:
			if hasCode(terr, transport.NameUnknownErrorCode) {
				return fmt.Sprintf("repository %q not found", nref.Context().RepositoryStr())
			}
			if ref.Digest != "" {
				return fmt.Sprintf("digest %s not found in repository %q", ref.Digest, nref.Context().RepositoryStr())
			}
			return fmt.Sprintf("tag %q not found in repository %q", ref.Tag, nref.Context().RepositoryStr())
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Sprintf("authentication refused (%s): check your credentials for %s (docker login) and that the repository exists",
				status(terr.StatusCode), nref.Context().RegistryStr())
		}
		return statusError(terr.StatusCode, r.attempts)
	}
	return describeNetwork(err, r.attempts)
}

// describeNetwork names a failure below HTTP (refused, unreachable, no such
// host, dropped connection), or else gives the error's text on one line.
func describeNetwork(err error, attempts int) string {
	if s := netError(err); s != "" {
		return s
	}
	if droppedConnection(err) {
		return fmt.Sprintf("connection closed by the registry after %d attempts", attempts)
	}
	return oneLine(err.Error())
}

func hasCode(terr *transport.Error, code transport.ErrorCode) bool {
	for _, d := range terr.Errors {
		if d.Code == code {
			return true
		}
	}
	return false
}

// describedError is a one-line message for users that keeps its cause for
// errors.Is and errors.As: go-containerregistry's own messages carry URLs
// and multi-line JSON bodies that do not belong in a CLI's error line.
type describedError struct {
	msg string
	err error
}

func (e *describedError) Error() string { return e.msg }
func (e *describedError) Unwrap() error { return e.err }

// contextError describes a timeout or cancellation, or returns "".
func contextError(parent context.Context, err error, timeout time.Duration) string {
	switch {
	case parent.Err() != nil && errors.Is(parent.Err(), context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		if parent.Err() != nil {
			return "timed out"
		}
		return fmt.Sprintf("timed out after %s", timeout)
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return ""
}

// status renders an HTTP status as "http 503 service unavailable".
func status(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("http %d %s", code, strings.ToLower(t))
	}
	return fmt.Sprintf("http %d", code)
}

// statusError describes a failed status other than 404, 401 and 403.
func statusError(code, attempts int) string {
	switch {
	case code == http.StatusTooManyRequests:
		return fmt.Sprintf("rate limited (%s) after %d attempts; try again later", status(code), attempts)
	case code >= 500 && retryStatus(code):
		return fmt.Sprintf("registry unavailable (%s) after %d attempts", status(code), attempts)
	}
	return fmt.Sprintf("unexpected answer (%s)", status(code))
}

// netError describes a failure to reach the server, or returns "".
func netError(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve host %q", dnsErr.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "cannot connect: connection refused (is the registry running?)"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "cannot connect: host unreachable"
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		return "tls certificate not trusted"
	case errors.As(err, &recordErr):
		return "tls handshake failed: the server does not speak https"
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return "timed out connecting"
	}
	return ""
}

// droppedConnection reports whether the server closed the connection
// under a request.
func droppedConnection(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// oneLine squeezes an unexpected error message into one short line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
