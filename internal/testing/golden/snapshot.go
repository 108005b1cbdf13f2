package golden

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Snapshot describes every entry under root (root itself excluded), keyed by
// slash path: its mode and a file's content or a link's target. Two equal
// snapshots are the same tree byte for byte and mode for mode, with nothing
// added or removed; tests of "a failure changes nothing" compare them.
func Snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(data)
		}
		got[filepath.ToSlash(rel)] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// SnapshotDiff lists, one a line, the entries missing from got, changed or
// extra; "" when the snapshots are equal.
func SnapshotDiff(want, got map[string]string) string {
	var out []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			out = append(out, fmt.Sprintf("missing %s (%.60q)", p, w))
		} else if g != w {
			out = append(out, fmt.Sprintf("changed %s: %.60q, want %.60q", p, g, w))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			out = append(out, fmt.Sprintf("extra %s (%.60q)", p, g))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
