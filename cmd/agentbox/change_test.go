package main

import (
	"testing"

	"github.com/agentbox-dev/agentbox/review"
)

// TestChangeRisk: a risk row shows one package once with its two versions,
// another value as it is.
func TestChangeRisk(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"undici@7.1.0", "undici@7.0.0", "undici 7.1.0 -> 7.0.0"},
		{"x@1.0.0 at y/node_modules/x", "x@1.0.0", "x 1.0.0 at y/node_modules/x -> 1.0.0"},
		{"debian:bookworm-slim@sha256:" + sixtyFour('1'), "mirror.example/debian:bookworm-slim@sha256:" + sixtyFour('2'),
			"debian:bookworm-slim@sha256:111111111111… -> mirror.example/debian:bookworm-slim@sha256:222222222222…"},
		{"no version", "another", "no version -> another"},
	} {
		if got := change(review.DiffRow{Kind: review.Risk, From: tc.from, To: tc.to}); got != tc.want {
			t.Errorf("change(%q, %q) = %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}

func sixtyFour(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
