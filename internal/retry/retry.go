// Package retry owns the one retry loop of agentbox's network clients:
// a few attempts with jittered exponential backoff, stopped at once by an
// error not worth repeating or by the end of the context.
package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// maxDelay caps the wait between two attempts.
const maxDelay = time.Minute

// Do calls op until it succeeds, returns an error that retryable rejects, or
// has been called attempts times (at least once); it returns op's last
// error. Between attempts it waits first, then twice as long each time, plus
// up to 20% jitter. A nil retryable retries every error. If ctx ends while
// Do waits, Do returns at once with ctx's error wrapping the last error.
func Do(ctx context.Context, attempts int, first time.Duration, retryable func(error) bool, op func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || attempt >= attempts || (retryable != nil && !retryable(err)) {
			return err
		}
		t := time.NewTimer(backoff(first, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w while waiting to retry after: %w", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// backoff returns the wait before retry number retry (1 for the first):
// first doubled retry-1 times, capped at maxDelay, plus up to 20% jitter.
func backoff(first time.Duration, retry int) time.Duration {
	d := first
	for i := 1; i < retry && d < maxDelay; i++ {
		d *= 2
	}
	d = max(min(d, maxDelay), 0)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}
