package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// noTemps fails if dir holds a leftover temporary file.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

func check(t *testing.T, path string, data []byte, perm fs.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("%s holds %q, want %q", path, got, data)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != perm {
		t.Errorf("%s has mode %v, want %v", path, fi.Mode(), perm)
	}
}

func write(t *testing.T, path string, data []byte, perm fs.FileMode, wantChanged bool) {
	t.Helper()
	changed, err := WriteFile(path, data, perm)
	if err != nil {
		t.Fatal(err)
	}
	if changed != wantChanged {
		t.Errorf("WriteFile(%s) changed = %v, want %v", path, changed, wantChanged)
	}
	check(t, path, data, perm)
	noTemps(t, filepath.Dir(path))
}

func TestNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.txt")
	write(t, path, []byte("hello\n"), 0o644, true)
}

func TestEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty")
	write(t, path, nil, 0o600, true)
	write(t, path, []byte{}, 0o600, false)
}

func TestModeIgnoresUmask(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.sh")
	write(t, path, []byte("#!/bin/sh\n"), 0o777, true) // a typical umask 022 would give 0755
}

func TestUnchangedDoesNotTouch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path, []byte("same\n"), 0o644, true)
	past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, []byte("same\n"), 0o644, false)
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(past) || !os.SameFile(before, after) {
		t.Errorf("unchanged file was touched: mtime %v (want %v), same inode %v", after.ModTime(), past, os.SameFile(before, after))
	}
}

func TestChangedContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path, []byte("one\n"), 0o644, true)
	write(t, path, []byte("two\n"), 0o644, true)
	write(t, path, []byte("two plus\n"), 0o644, true) // same prefix, other size
}

func TestChangedPermOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path, []byte("x\n"), 0o644, true)
	write(t, path, []byte("x\n"), 0o755, true)
	write(t, path, []byte("x\n"), 0o755, false)
}

func TestCreatesParents(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "c", "f")
	write(t, path, []byte("deep\n"), 0o644, true)
	fi, err := os.Stat(filepath.Join(root, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&^0o755 != 0 {
		t.Errorf("parent mode %v, want a directory with at most 0755", fi.Mode())
	}
}

func TestReplacesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	write(t, link, []byte("data\n"), 0o644, true)
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link was not replaced by a regular file: %v, %v", fi, err)
	}
	check(t, target, []byte("data\n"), 0o644)
}

func TestErrors(t *testing.T) {
	t.Run("parent is a regular file", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "file")
		if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		changed, err := WriteFile(filepath.Join(file, "sub", "f"), []byte("y"), 0o644)
		if err == nil || changed {
			t.Fatalf("WriteFile under a regular file: changed=%v err=%v, want an error", changed, err)
		}
		t.Log(err)
		noTemps(t, dir)
	})
	t.Run("path is a directory", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "d")
		if err := os.MkdirAll(filepath.Join(path, "child"), 0o755); err != nil {
			t.Fatal(err)
		}
		changed, err := WriteFile(path, []byte("y"), 0o644)
		if err == nil || changed {
			t.Fatalf("WriteFile over a directory: changed=%v err=%v, want an error", changed, err)
		}
		t.Log(err)
		noTemps(t, dir)
	})
	t.Run("directory not writable", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			dir = "/proc/self" // root ignores directory permissions; nobody creates files here
		}
		changed, err := WriteFile(filepath.Join(dir, "f"), []byte("y"), 0o644)
		if err == nil || changed {
			t.Fatalf("WriteFile in a read-only directory: changed=%v err=%v, want an error", changed, err)
		}
		noTemps(t, dir)
	})
	t.Run("mode bits beyond permissions", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := WriteFile(filepath.Join(dir, "f"), []byte("y"), 0o644|fs.ModeSetuid); err == nil {
			t.Fatal("WriteFile accepted a setuid mode")
		}
		if _, err := os.Stat(filepath.Join(dir, "f")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file was written: %v", err)
		}
	})
}

// TestConcurrentReaders alternates two large contents while readers check
// that every read sees one of them whole.
func TestConcurrentReaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	a := bytes.Repeat([]byte("a"), 1<<20)
	b := bytes.Repeat([]byte("bb\n"), 1<<19) // another size, too
	if _, err := WriteFile(path, a, 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				got, err := os.ReadFile(path)
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
					t.Errorf("read a partial or mixed file of %d bytes", len(got))
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := range 40 {
		data := a
		if i%2 == 0 {
			data = b
		}
		if changed, err := WriteFile(path, data, 0o644); err != nil || !changed {
			t.Fatalf("write %d: changed=%v err=%v", i, changed, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d whole reads during 40 writes", reads.Load())
	noTemps(t, filepath.Dir(path))
}
