package images

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scripted is a RoundTripper that answers each request with the next of its
// answers: a status code, or an error. It records the bodies it was sent
// and whether each response was closed.
type scripted struct {
	answers []any // int status or error
	bodies  []string
	closed  []*closeSpy
}

type closeSpy struct {
	io.Reader
	closed bool
}

func (c *closeSpy) Close() error { c.closed = true; return nil }

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	body := ""
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body.Close()
		body = string(b)
	}
	s.bodies = append(s.bodies, body)
	a := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	if err, ok := a.(error); ok {
		return nil, err
	}
	spy := &closeSpy{Reader: strings.NewReader(http.StatusText(a.(int)))}
	s.closed = append(s.closed, spy)
	return &http.Response{StatusCode: a.(int), Body: spy, Request: req}, nil
}

var (
	errReset   = &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}
	errRefused = &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}
)

func TestRetryingTransport(t *testing.T) {
	cases := []struct {
		name    string
		answers []any
		sent    int
		status  int   // 0: an error
		err     error // when status is 0
	}{
		{"ok at once", []any{200}, 1, 200, nil},
		{"503 then ok", []any{503, 200}, 2, 200, nil},
		{"429 then ok", []any{429, 200}, 2, 200, nil},
		{"503 every time: the last answer", []any{503}, 3, 503, nil},
		{"501 is final", []any{501}, 1, 501, nil},
		{"404 is final", []any{404}, 1, 404, nil},
		{"dropped connection then ok", []any{errReset, 200}, 2, 200, nil},
		{"dropped every time", []any{errReset}, 3, 0, syscall.ECONNRESET},
		{"refused is final", []any{errRefused, 200}, 1, 0, syscall.ECONNREFUSED},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			inner := &scripted{answers: c.answers}
			rt := &retrying{inner: inner, attempts: 3, first: time.Millisecond}
			req, _ := http.NewRequest(http.MethodHead, "https://registry.example.test/v2/", nil)
			resp, err := rt.RoundTrip(req)
			if len(inner.bodies) != c.sent {
				t.Errorf("sent %d requests, want %d", len(inner.bodies), c.sent)
			}
			if c.status == 0 {
				if resp != nil || !errors.Is(err, c.err) {
					t.Fatalf("RoundTrip = %v, %v; want error %v", resp, err, c.err)
				}
			} else {
				if err != nil || resp.StatusCode != c.status {
					t.Fatalf("RoundTrip = %v, %v; want status %d", resp, err, c.status)
				}
				if b, _ := io.ReadAll(resp.Body); string(b) != http.StatusText(c.status) {
					t.Errorf("body %q, want the last answer's", b)
				}
			}
			for i, spy := range inner.closed {
				if last := i == len(inner.closed)-1; !last && !spy.closed {
					t.Errorf("answer %d was retried without closing its body", i+1)
				}
			}
		})
	}
}

func TestRetryingTransportResendsBody(t *testing.T) {
	inner := &scripted{answers: []any{503, errReset, 200}}
	rt := &retrying{inner: inner, attempts: 4, first: time.Millisecond}
	req, _ := http.NewRequest(http.MethodPost, "https://registry.example.test/token", strings.NewReader("grant_type=refresh_token"))
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	want := []string{"grant_type=refresh_token", "grant_type=refresh_token", "grant_type=refresh_token"}
	if strings.Join(inner.bodies, "|") != strings.Join(want, "|") {
		t.Errorf("bodies sent %q, want %q", inner.bodies, want)
	}

	// A body that cannot be read twice is sent once.
	inner = &scripted{answers: []any{503, 200}}
	rt = &retrying{inner: inner, attempts: 4, first: time.Millisecond}
	req, _ = http.NewRequest(http.MethodPost, "https://registry.example.test/token", io.NopCloser(strings.NewReader("x")))
	resp, err := rt.RoundTrip(req)
	if err != nil || resp.StatusCode != 503 || len(inner.bodies) != 1 {
		t.Errorf("RoundTrip = %v, %v after %d requests; want the 503 after 1", resp, err, len(inner.bodies))
	}
}

func TestRetryingTransportCancelDuringBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inner := &scripted{answers: []any{503}}
	rt := &retrying{inner: inner, attempts: 4, first: time.Hour}
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, "https://registry.example.test/v2/", nil)
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	resp, err := rt.RoundTrip(req)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("RoundTrip returned after %s, want soon after the cancel", elapsed)
	}
	if resp != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("RoundTrip = %v, %v; want context.Canceled", resp, err)
	}
	if len(inner.closed) != 1 || !inner.closed[0].closed {
		t.Error("the 503's body was not closed")
	}
}
