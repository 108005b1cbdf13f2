package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefuseLinks(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "a/link")); err != nil {
		t.Fatal(err)
	}
	if err := RefuseLinks(root, "a", "a/b", "a/b/missing"); err != nil {
		t.Errorf("no link: %v", err)
	}
	want := "refusing to write through " + filepath.Join(root, "a", "link") + ": it is a symbolic link"
	if err := RefuseLinks(root, "a", "a/link", "a/link/x"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a link: %v, want %q", err, want)
	}
}
