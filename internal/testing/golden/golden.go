// Package golden holds the shared -update flag and the comparison of a
// generated file tree with its expected copy on disk. `go test ./... -update`
// passes -update to every test binary, so every package with tests imports
// this one (a blank import is enough).
package golden

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/udiff"
)

var update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// Update reports whether the test run was asked to rewrite golden files.
func Update() bool { return *update }

// ReadTree reads every file under root, keyed by slash path. A symbolic
// link is not followed: its content reads "symlink to TARGET".
func ReadTree(t testing.TB, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			files[filepath.ToSlash(rel)] = []byte("symlink to " + target)
			return err
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

// CompareTree compares got with the tree under wantDir, or rewrites wantDir
// with got under -update.
func CompareTree(t testing.TB, wantDir string, got map[string][]byte) {
	t.Helper()
	if Update() {
		if err := os.RemoveAll(wantDir); err != nil {
			t.Fatal(err)
		}
		for p, data := range got {
			full := filepath.Join(wantDir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := ReadTree(t, wantDir)
	paths := map[string]bool{}
	for p := range want {
		paths[p] = true
	}
	for p := range got {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	for _, p := range sorted {
		w, inWant := want[p]
		g, inGot := got[p]
		if d := udiff.Unified(p, w, g, !inWant, !inGot); d != "" {
			t.Errorf("%s differs from %s (run go test ./... -update to accept):\n%s", p, wantDir, d)
		}
	}
}

// CompareFile compares got with the file at path, or rewrites it under -update.
func CompareFile(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := udiff.Unified(filepath.Base(path), want, got, false, false); d != "" {
		t.Errorf("%s differs (run go test ./... -update to accept):\n%s", path, d)
	}
}
