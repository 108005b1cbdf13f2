package lockfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoundTrip: every committed lock (golden cases, examples) parses, but
// for the failing cases' that are refused on purpose, and what Marshal
// writes parses back to the same lock: one canonical form, so bump rewrites
// a lock only when a pin changed.
func TestRoundTrip(t *testing.T) {
	golden, _ := filepath.Glob("../testdata/golden/*/" + File)
	examples, _ := filepath.Glob("../examples/*/" + File)
	files := append(golden, examples...)
	if len(files) < 10 {
		t.Fatalf("only %d lock files found", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		l, err := Parse(f, data)
		if err != nil {
			if strings.HasPrefix(filepath.Base(filepath.Dir(f)), "fail-") {
				continue // refused on purpose
			}
			t.Errorf("%s: %v", f, err)
			continue
		}
		out := l.Marshal()
		back, err := Parse(f, out)
		if err != nil {
			t.Errorf("%s: what Marshal writes does not parse: %v\n%s", f, err, out)
			continue
		}
		if again := back.Marshal(); !bytes.Equal(again, out) {
			t.Errorf("%s: Marshal, Parse, Marshal changes the lock:\n%s\n---\n%s", f, out, again)
		}
	}
}

// TestRead: no lock is no error and a nil Lock; a bad one is an error that
// names the file as dir/agentbox.lock.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	if l, err := Read(dir); l != nil || err != nil {
		t.Fatalf("Read of a directory without a lock = %v, %v; want nil, nil", l, err)
	}
	if err := os.WriteFile(filepath.Join(dir, File), []byte("format_version: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(dir)
	if err == nil || !bytes.HasPrefix([]byte(err.Error()), []byte(filepath.Join(dir, File)+":")) {
		t.Fatalf("Read of a bad lock = %v; want an error at %s", err, filepath.Join(dir, File))
	}
}
