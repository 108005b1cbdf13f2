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

// TestReadWithExpiries: a grant made before since whose expiry falls after
// it shows its expire record; records before since do not show; a
// missing log is an empty list.
func TestReadWithExpiries(t *testing.T) {
	log := filepath.Join(t.TempDir(), "demo.jsonl")
	if recs, err := ReadWithExpiries(log, time.Time{}, now); err != nil || recs == nil || len(recs) != 0 {
		t.Fatalf("a missing log: %#v, %v", recs, err)
	}
	exp := now.Add(-30 * time.Minute)
	for _, r := range []Record{
		{Time: now.Add(-2 * time.Hour), Event: Revoke, Dest: "198.18.9.0/24", Ports: []uint16{443}, Result: OK},
		{Time: now.Add(-time.Hour), Event: Grant, Dest: "198.18.7.0/24", Ports: []uint16{443}, Seconds: 1800, Expires: &exp, Result: OK},
	} {
		if err := Append(log, r); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ReadWithExpiries(log, now.Add(-45*time.Minute), now)
	if err != nil || len(recs) != 1 || recs[0].Event != Expire || !recs[0].Time.Equal(exp) {
		t.Errorf("since 45m ago: %+v, %v", recs, err)
	}
	if recs, _ := ReadWithExpiries(log, time.Time{}, now); len(recs) != 3 {
		t.Errorf("the whole log: %+v", recs)
	}
}
