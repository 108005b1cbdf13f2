package neterr

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStatusError(t *testing.T) {
	cases := []struct {
		code int
		want string
	}{
		{429, "rate limited (http 429 too many requests) after 3 attempts; try again later"},
		{500, "registry unavailable (http 500 internal server error) after 3 attempts"},
		{503, "registry unavailable (http 503 service unavailable) after 3 attempts"},
		{599, "registry unavailable (http 599) after 3 attempts"},
		{501, "unexpected answer (http 501 not implemented)"},
		{418, "unexpected answer (http 418 i'm a teapot)"},
	}
	for _, c := range cases {
		if got := StatusError(c.code, 3); got != c.want {
			t.Errorf("StatusError(%d, 3) = %q, want %q", c.code, got, c.want)
		}
	}
}

func TestRetryStatus(t *testing.T) {
	for code, want := range map[int]bool{429: true, 500: true, 502: true, 599: true, 501: false, 404: false, 200: false, 401: false} {
		if got := RetryStatus(code); got != want {
			t.Errorf("RetryStatus(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestDescribeNetwork(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"no such host", &net.DNSError{Name: "registry.example.test", Err: "no such host"}, `cannot resolve host "registry.example.test"`},
		{"refused", &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}, "cannot connect: connection refused (is the registry running?)"},
		{"unreachable", &os.SyscallError{Syscall: "connect", Err: syscall.ENETUNREACH}, "cannot connect: host unreachable"},
		{"untrusted", fmt.Errorf("get: %w", x509.UnknownAuthorityError{}), "tls certificate not trusted"},
		{"dropped", &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}, "connection closed by the registry after 4 attempts"},
		{"eof", fmt.Errorf("get: %w", io.EOF), "connection closed by the registry after 4 attempts"},
		{"other", errors.New("something\n  odd"), "something odd"},
	}
	for _, c := range cases {
		if got := DescribeNetwork(c.err, 4); got != c.want {
			t.Errorf("%s: DescribeNetwork = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestContextError(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	cases := []struct {
		name   string
		parent context.Context
		err    error
		want   string
	}{
		{"parent canceled", canceled, context.Canceled, "canceled"},
		{"own timeout", context.Background(), fmt.Errorf("get: %w", context.DeadlineExceeded), "timed out after 2s"},
		{"parent's deadline", expired, context.DeadlineExceeded, "timed out"},
		{"canceled below", context.Background(), context.Canceled, "canceled"},
		{"not a context error", context.Background(), io.EOF, ""},
	}
	for _, c := range cases {
		if got := ContextError(c.parent, c.err, 2*time.Second); got != c.want {
			t.Errorf("%s: ContextError = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("a\n\tb  c"); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
	if got := OneLine(strings.Repeat("x", 300)); got != strings.Repeat("x", 200)+"..." {
		t.Errorf("OneLine of 300 characters = %q", got)
	}
}

func TestDescribedError(t *testing.T) {
	cause := &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}
	var err error = &DescribedError{Msg: "reading x: connection closed", Err: cause}
	if err.Error() != "reading x: connection closed" || !errors.Is(err, syscall.ECONNRESET) || !DroppedConnection(err) {
		t.Errorf("DescribedError %q does not keep its message and cause", err)
	}
}
