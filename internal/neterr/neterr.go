// Package neterr words the failures of agentbox's network clients (the image
// registry resolver, the npm registry client) for users: one line that names
// what went wrong, with the cause kept for errors.Is and errors.As. It also
// says which HTTP answers are worth asking again.
package neterr

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"
)

// DescribedError is a one-line message for users that keeps its cause for
// errors.Is and errors.As: the clients' own messages carry URLs and
// multi-line bodies that do not belong in a CLI's error line.
type DescribedError struct {
	Msg string
	Err error
}

func (e *DescribedError) Error() string { return e.Msg }
func (e *DescribedError) Unwrap() error { return e.Err }

// retryStatusCodes are the answers worth asking again: 429 and every 5xx
// except 501 Not Implemented, which will not change.
var retryStatusCodes = func() []int {
	codes := []int{http.StatusTooManyRequests}
	for c := 500; c < 600; c++ {
		if c != http.StatusNotImplemented {
			codes = append(codes, c)
		}
	}
	return codes
}()

// RetryStatus reports whether an answer with this status is worth asking
// again: 429 and every 5xx but 501.
func RetryStatus(code int) bool { return slices.Contains(retryStatusCodes, code) }

// ContextError describes a timeout or cancellation, or returns "". parent
// is the caller's context, timeout the client's own limit below it.
func ContextError(parent context.Context, err error, timeout time.Duration) string {
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

// Status renders an HTTP status as "http 503 service unavailable".
func Status(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("http %d %s", code, strings.ToLower(t))
	}
	return fmt.Sprintf("http %d", code)
}

// StatusError describes a failed status other than 404, 401 and 403.
func StatusError(code, attempts int) string {
	switch {
	case code == http.StatusTooManyRequests:
		return fmt.Sprintf("rate limited (%s) after %d attempts; try again later", Status(code), attempts)
	case code >= 500 && RetryStatus(code):
		return fmt.Sprintf("registry unavailable (%s) after %d attempts", Status(code), attempts)
	}
	return fmt.Sprintf("unexpected answer (%s)", Status(code))
}

// DescribeNetwork names a failure below HTTP (refused, unreachable, no such
// host, dropped connection), or else gives the error's text on one line.
func DescribeNetwork(err error, attempts int) string {
	if s := NetError(err); s != "" {
		return s
	}
	if DroppedConnection(err) {
		return fmt.Sprintf("connection closed by the registry after %d attempts", attempts)
	}
	return OneLine(err.Error())
}

// NetError describes a failure to reach the server, or returns "".
func NetError(err error) string {
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

// DroppedConnection reports whether the server closed the connection
// under a request.
func DroppedConnection(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// OneLine squeezes an unexpected error message into one short line.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
