package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

var (
	errFlaky = errors.New("flaky")
	errFinal = errors.New("final")
)

func isFlaky(err error) bool { return errors.Is(err, errFlaky) }

func TestDoAttempts(t *testing.T) {
	cases := []struct {
		name     string
		attempts int
		fails    []error // what the op returns, call by call; nil after the list
		calls    int
		want     error
	}{
		{"success at once", 4, nil, 1, nil},
		{"success after two retries", 4, []error{errFlaky, errFlaky}, 3, nil},
		{"retries exhausted", 3, []error{errFlaky, errFlaky, errFlaky, errFlaky}, 3, errFlaky},
		{"final error stops at once", 4, []error{errFinal}, 1, errFinal},
		{"final error after a retry", 4, []error{errFlaky, errFinal}, 2, errFinal},
		{"one attempt", 1, []error{errFlaky}, 1, errFlaky},
		{"zero attempts means one", 0, []error{errFlaky}, 1, errFlaky},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := Do(context.Background(), c.attempts, time.Millisecond, isFlaky, func(context.Context) error {
				calls++
				if calls <= len(c.fails) {
					return c.fails[calls-1]
				}
				return nil
			})
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Errorf("Do = %v, want %v", err, c.want)
			}
			if calls != c.calls {
				t.Errorf("%d calls, want %d", calls, c.calls)
			}
		})
	}
}

func TestDoNilRetryableRetriesEverything(t *testing.T) {
	calls := 0
	err := Do(context.Background(), 3, time.Millisecond, nil, func(context.Context) error {
		calls++
		return errFinal
	})
	if !errors.Is(err, errFinal) || calls != 3 {
		t.Errorf("Do = %v after %d calls, want %v after 3", err, calls, errFinal)
	}
}

func TestDoWaitsBetweenAttempts(t *testing.T) {
	start := time.Now()
	_ = Do(context.Background(), 3, 20*time.Millisecond, isFlaky, func(context.Context) error { return errFlaky })
	if elapsed := time.Since(start); elapsed < 60*time.Millisecond { // 20 ms, then 40 ms
		t.Errorf("3 attempts took %s, want at least 60ms of backoff", elapsed)
	}
}

func TestDoCancelDuringBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	start := time.Now()
	err := Do(ctx, 5, time.Hour, isFlaky, func(context.Context) error {
		calls++
		cancel()
		return errFlaky
	})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("Do returned after %s, want at once after the cancel", elapsed)
	}
	if calls != 1 {
		t.Errorf("%d calls, want 1", calls)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errFlaky) {
		t.Errorf("Do = %v, want context.Canceled wrapping the last error", err)
	}
}

func TestDoPassesContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	_ = Do(ctx, 1, time.Millisecond, nil, func(got context.Context) error {
		if got.Value(key{}) != "v" {
			t.Error("op did not get Do's context")
		}
		return nil
	})
}

func TestBackoff(t *testing.T) {
	cases := []struct {
		first time.Duration
		retry int
		min   time.Duration
	}{
		{100 * time.Millisecond, 1, 100 * time.Millisecond},
		{100 * time.Millisecond, 2, 200 * time.Millisecond},
		{100 * time.Millisecond, 4, 800 * time.Millisecond},
		{time.Second, 80, maxDelay},
	}
	for _, c := range cases {
		for range 50 {
			got := backoff(c.first, c.retry)
			if got < c.min || got > c.min+c.min/5 {
				t.Fatalf("backoff(%s, %d) = %s, want within [%s, %s]", c.first, c.retry, got, c.min, c.min+c.min/5)
			}
		}
	}
}
