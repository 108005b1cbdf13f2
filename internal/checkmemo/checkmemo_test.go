package checkmemo

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A memo remembers what passed for one binary; the same binary rewritten
// (another build, installed over it) starts afresh.
func TestMemoPerBinary(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "agentbox")
	if err := os.WriteFile(exe, []byte("build 1"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	m := open(exe, root)
	k := Key([]byte("data"), "a.sh", "/p/.agentbox", "demo")
	if m.Passed(k) {
		t.Fatal("an empty memo knows a key")
	}
	m.Pass(k)
	m.Pass(k) // again: no harm
	if !open(exe, root).Passed(k) {
		t.Fatal("the binary's memo forgot a pass")
	}
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(exe, []byte("build 2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if open(exe, root).Passed(k) {
		t.Error("a rebuilt binary took the old one's word")
	}
}

// Key separates its names: moving a byte from one name to the next, or
// into the data, is another key.
func TestKeySeparates(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range []string{Key([]byte("c"), "ab", ""), Key([]byte("c"), "a", "b"), Key([]byte("bc"), "a"), Key([]byte("c"), "a", "b", "")} {
		if keys[k] {
			t.Errorf("two checks share key %s", k)
		}
		keys[k] = true
	}
}

// No binary, no memo: nothing is remembered and nothing fails.
func TestNilMemo(t *testing.T) {
	m := open(filepath.Join(t.TempDir(), "missing"), t.TempDir())
	if m != nil {
		t.Fatal("a memo for a binary that is not there")
	}
	m.Pass("k")
	if m.Passed("k") {
		t.Error("a nil memo knows a key")
	}
}

// A binary's first pass removes the memos of binaries unused for a month,
// and keeps the others.
func TestPrune(t *testing.T) {
	root := t.TempDir()
	old, recent := filepath.Join(root, "old"), filepath.Join(root, "recent")
	for _, d := range []string{old, recent} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-keep - time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "agentbox")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	open(exe, root).Pass("k")
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the memo of a binary unused for a month is still there (%v)", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("a recent memo was removed: %v", err)
	}
}

// A name planted in the memo's directory as a link is not written through.
func TestPassDoesNotFollowLinks(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "agentbox")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	m := open(exe, t.TempDir())
	m.Pass("first") // makes the directory
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(target, filepath.Join(m.dir, "k")); err != nil {
		t.Fatal(err)
	}
	m.Pass("k")
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("Pass wrote through a link: %v", err)
	}
}
