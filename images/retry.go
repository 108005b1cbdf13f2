package images

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/agentbox-dev/agentbox/internal/neterr"
	"github.com/agentbox-dev/agentbox/internal/retry"
)

// retrying is the resolver's http.RoundTripper: it repeats a request whose
// answer neterr.RetryStatus accepts or whose connection the server dropped,
// with retry.Do's backoff, and gives up when the request's context ends.
// After the last attempt it returns the last answer as it came, so that
// go-containerregistry reports the registry's own error.
type retrying struct {
	inner    http.RoundTripper
	attempts int
	first    time.Duration
}

// errRetryStatus marks an answer neterr.RetryStatus accepts.
var errRetryStatus = errors.New("retryable status")

// RoundTrip implements http.RoundTripper.
func (t *retrying) RoundTrip(req *http.Request) (*http.Response, error) {
	attempts := t.attempts
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		attempts = 1 // the body cannot be sent twice
	}
	var resp *http.Response
	sent := 0
	err := retry.Do(req.Context(), attempts, t.first, retryableAttempt, func(context.Context) error {
		discard(resp)
		resp = nil
		r, err := resend(req, sent)
		if err != nil {
			return err
		}
		sent++
		resp, err = t.inner.RoundTrip(r)
		if err == nil && neterr.RetryStatus(resp.StatusCode) {
			return errRetryStatus
		}
		return err
	})
	switch {
	case err == errRetryStatus:
		return resp, nil
	case err != nil:
		discard(resp)
		return nil, err
	}
	return resp, nil
}

// resend returns req for its first sending, else a copy with a fresh body.
func resend(req *http.Request, sent int) (*http.Request, error) {
	if sent == 0 || req.GetBody == nil {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

// retryableAttempt reports whether a failed attempt is worth repeating: an
// answer neterr.RetryStatus accepts or a connection the server dropped. Timeouts,
// refused connections and every other answer are final.
func retryableAttempt(err error) bool {
	if errors.Is(err, errRetryStatus) {
		return true
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && neterr.DroppedConnection(err)
}

// discard reads and closes an answer that will not be returned, so that its
// connection can be reused.
func discard(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
