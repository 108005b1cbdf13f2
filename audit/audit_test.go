package audit

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// TestAuditConcurrentAppends: records appended at once stay whole lines.
func TestAuditConcurrentAppends(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit", "demo.jsonl")
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				r := Record{Time: now, Event: Grant, Dest: "198.18.7.0/24", Ports: []uint16{443},
					Reason: fmt.Sprintf("writer %d record %d %s", g, i, strings.Repeat("x", 400)), Result: OK}
				if err := Append(log, r); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	recs, err := Read(log, time.Time{})
	if err != nil || len(recs) != 200 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Reason] = true
	}
	if len(seen) != 200 {
		t.Errorf("%d distinct records", len(seen))
	}
}

// TestClipReason: a reason is kept as given (termsafe escapes it where it
// is printed), trimmed and cut at 500 bytes without splitting a rune.
func TestClipReason(t *testing.T) {
	for in, want := range map[string]string{
		"  fetch fixtures  ":           "fetch fixtures",
		"a\x1b[2Jb\tc\nd":              "a\x1b[2Jb\tc\nd",
		"bidi \u202e override":         "bidi \u202e override",
		"bad \xff utf8":                "bad \xff utf8",
		strings.Repeat("é", 251):       strings.Repeat("é", 250),
		"a" + strings.Repeat("é", 250): "a" + strings.Repeat("é", 249),
		strings.Repeat("a", 501):       strings.Repeat("a", 500),
		strings.Repeat("\xff", 501):    strings.Repeat("\xff", 500),
		strings.Repeat("a", 499) + "😀": strings.Repeat("a", 499),
		"\x00":                         "\x00",
		"":                             "",
	} {
		if got := ClipReason(in); got != want {
			t.Errorf("ClipReason(%q) = %q, want %q", in, got, want)
		}
	}
}
