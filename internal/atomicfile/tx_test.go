package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/golden"
)

func tree(t *testing.T, root string) map[string]string { return golden.Snapshot(t, root) }

func sameTree(t *testing.T, root string, want map[string]string) {
	t.Helper()
	if d := golden.SnapshotDiff(want, tree(t, root)); d != "" {
		t.Errorf("tree under %s:\n%s", root, d)
	}
}

// fixture makes a tree and a transaction over it that exercises every kind
// of change: a file unchanged, one with new content, one with a new mode
// only, a symbolic link replaced, a new file in new directories, a new file
// beside old ones, and two removals.
func fixture(t *testing.T) (root string, tx *Tx) {
	t.Helper()
	root = t.TempDir()
	for _, f := range []struct {
		path, data string
		perm       fs.FileMode
	}{
		{"a/keep", "same\n", 0o644},
		{"a/change", "old\n", 0o644},
		{"a/script.sh", "#!/bin/sh\n", 0o644},
		{"a/stale", "stale\n", 0o600},
		{"c/stale", "other stale\n", 0o755},
		{"b/notes", "mine\n", 0o644},
	} {
		p := filepath.Join(root, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), f.perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.perm); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../a/keep", filepath.Join(root, "b/link")); err != nil {
		t.Fatal(err)
	}
	tx = &Tx{}
	tx.WriteFile(filepath.Join(root, "a/keep"), []byte("same\n"), 0o644)
	tx.WriteFile(filepath.Join(root, "a/change"), []byte("new\n"), 0o644)
	tx.WriteFile(filepath.Join(root, "a/script.sh"), []byte("#!/bin/sh\n"), 0o755)
	tx.WriteFile(filepath.Join(root, "b/link"), []byte("was a link\n"), 0o644)
	tx.WriteFile(filepath.Join(root, "b/new"), []byte("new beside\n"), 0o644)
	tx.WriteFile(filepath.Join(root, "n/e/w"), []byte("deep\n"), 0o640)
	tx.Remove(filepath.Join(root, "a/stale"))
	tx.Remove(filepath.Join(root, "c/stale"))
	return root, tx
}

// fixtureAfter is the fixture's tree once its transaction committed.
var fixtureAfter = map[string]string{
	"a":           "drwxr-xr-x",
	"a/keep":      "-rw-r--r-- same\n",
	"a/change":    "-rw-r--r-- new\n",
	"a/script.sh": "-rwxr-xr-x #!/bin/sh\n",
	"b":           "drwxr-xr-x",
	"b/notes":     "-rw-r--r-- mine\n",
	"b/link":      "-rw-r--r-- was a link\n",
	"b/new":       "-rw-r--r-- new beside\n",
	"c":           "drwxr-xr-x",
	"n":           "drwxr-xr-x",
	"n/e":         "drwxr-xr-x",
	"n/e/w":       "-rw-r----- deep\n",
}

func TestTxCommits(t *testing.T) {
	root, tx := fixture(t)
	keep := filepath.Join(root, "a/keep")
	past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(keep, past, past); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(keep)
	changes, err := tx.Commit()
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, root, fixtureAfter)
	var got []string
	for _, c := range changes {
		rel, _ := filepath.Rel(root, c.Path)
		got = append(got, c.Kind+" "+rel)
	}
	want := []string{"update a/change", "update a/script.sh", "update b/link", "create b/new", "create n/e/w", "remove a/stale", "remove c/stale"}
	if !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if after, _ := os.Stat(keep); !os.SameFile(before, after) || !after.ModTime().Equal(past) {
		t.Error("the unchanged file was touched")
	}
	// Committed again, nothing changes.
	again := &Tx{}
	again.WriteFile(filepath.Join(root, "a/change"), []byte("new\n"), 0o644)
	if changes, err := again.Commit(); err != nil || len(changes) != 0 {
		t.Errorf("second commit: %v, %v", changes, err)
	}
}

// recordSteps commits the fixture's transaction and returns its steps.
func recordSteps(t *testing.T) []string {
	t.Helper()
	_, tx := fixture(t)
	var steps []string
	tx.Hook = func(op Op, path string) error {
		steps = append(steps, string(op)+" "+filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path))
		return nil
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return steps
}

// TestTxFailsAtEveryStep fails each step of a commit in turn, from the
// first directory created to the last directory fsynced: afterwards the
// tree is exactly as it was, with no temporary file, backup or directory
// left. A failed hard link is not a failure: the backup is then a rename.
func TestTxFailsAtEveryStep(t *testing.T) {
	steps := recordSteps(t)
	t.Logf("%d steps: %q", len(steps), steps)
	for _, op := range []Op{OpMkdir, OpCreate, OpWrite, OpLink, OpBackup, OpRename, OpRemove, OpSyncDir} {
		if !slices.ContainsFunc(steps, func(s string) bool { return strings.HasPrefix(s, string(op)+" ") }) {
			t.Errorf("the fixture has no %s step", op)
		}
	}
	for n, step := range steps {
		t.Run(fmt.Sprintf("%d %s", n+1, step), func(t *testing.T) {
			root, tx := fixture(t)
			before := tree(t, root)
			injected := errors.New("injected failure")
			calls := 0
			tx.Hook = func(op Op, path string) error {
				if calls++; calls == n+1 {
					return injected
				}
				return nil
			}
			changes, err := tx.Commit()
			if strings.HasPrefix(step, string(OpLink)+" ") {
				if err != nil {
					t.Fatalf("a failed hard link failed the commit: %v", err)
				}
				sameTree(t, root, fixtureAfter)
				return
			}
			if !errors.Is(err, injected) || changes != nil {
				t.Fatalf("Commit = %v, %v; want the injected error and no changes", changes, err)
			}
			if strings.Contains(err.Error(), "undoing it failed") {
				t.Errorf("the rollback failed: %v", err)
			}
			sameTree(t, root, before)
		})
	}
}

// TestTxRealFailures: failures from the file system itself, while staging
// and while committing, leave the tree as it was.
func TestTxRealFailures(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, root string, tx *Tx)
		want  string
	}{
		{"a directory where a file goes", func(t *testing.T, root string, tx *Tx) {
			os.MkdirAll(filepath.Join(root, "z/dir/child"), 0o755)
			tx.WriteFile(filepath.Join(root, "z/dir"), []byte("x"), 0o644)
		}, "writing " + "ROOT/z/dir: is a directory"},
		{"an empty directory where a file goes", func(t *testing.T, root string, tx *Tx) {
			os.MkdirAll(filepath.Join(root, "z/dir"), 0o755)
			tx.WriteFile(filepath.Join(root, "z/dir"), []byte("x"), 0o644)
		}, "writing ROOT/z/dir: is a directory"},
		{"a file where a directory goes", func(t *testing.T, root string, tx *Tx) {
			tx.WriteFile(filepath.Join(root, "a/keep/sub/f"), []byte("x"), 0o644)
		}, "writing ROOT/a/keep/sub/f: mkdir ROOT/a/keep: not a directory"},
		{"removing a missing file", func(t *testing.T, root string, tx *Tx) {
			tx.Remove(filepath.Join(root, "a/missing"))
		}, "removing ROOT/a/missing: lstat ROOT/a/missing: no such file or directory"},
		{"removing a directory", func(t *testing.T, root string, tx *Tx) {
			tx.Remove(filepath.Join(root, "b"))
		}, "removing ROOT/b: is a directory"},
		{"a path twice", func(t *testing.T, root string, tx *Tx) {
			tx.Remove(filepath.Join(root, "b/new"))
		}, "writing ROOT/b/new: named twice in one transaction"},
		{"bits beyond permissions", func(t *testing.T, root string, tx *Tx) {
			tx.WriteFile(filepath.Join(root, "z"), nil, 0o644|fs.ModeSetuid)
		}, "writing ROOT/z: mode urw-r--r-- has bits other than permissions"},
		{"a rename that fails", func(t *testing.T, root string, tx *Tx) {
			// Once everything is staged, a directory appears where the
			// last new file goes: its rename fails, after the others.
			late := filepath.Join(root, "b/late")
			tx.WriteFile(late, []byte("x"), 0o644)
			tx.Hook = func(op Op, path string) error {
				if op == OpRename && path == late {
					return os.Mkdir(late, 0o700)
				}
				return nil
			}
		}, "writing ROOT/b/late: rename"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, tx := fixture(t)
			tt.setup(t, root, tx)
			before := tree(t, root)
			changes, err := tx.Commit()
			if err == nil || changes != nil {
				t.Fatalf("Commit = %v, %v; want an error", changes, err)
			}
			if want := strings.ReplaceAll(tt.want, "ROOT", root); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q, want %q", err, want)
			}
			if tt.name == "a rename that fails" {
				before["b/late"] = "drwx------" // the hook's
			}
			sameTree(t, root, before)
		})
	}
}

// TestTxRollbackFailureIsReported: when a backup cannot be put back, the
// error says so and names the backup, which is kept; the rest is undone.
func TestTxRollbackFailureIsReported(t *testing.T) {
	root, tx := fixture(t)
	before := tree(t, root)
	change := filepath.Join(root, "a/change")
	tx.Hook = func(op Op, path string) error {
		switch {
		case op == OpSyncDir:
			return errors.New("injected sync failure")
		case op == OpRestore && path == change:
			return errors.New("injected restore failure")
		}
		return nil
	}
	_, err := tx.Commit()
	if err == nil {
		t.Fatal("Commit succeeded")
	}
	t.Log(err)
	msg := err.Error()
	i := strings.Index(msg, "its previous content is in ")
	if !strings.Contains(msg, "injected sync failure") || !strings.Contains(msg, change+" could not be restored (injected restore failure)") || i < 0 {
		t.Fatalf("error %q does not say what could not be restored and where its backup is", msg)
	}
	bak := strings.Fields(msg[i+len("its previous content is in "):])[0]
	if data, err := os.ReadFile(bak); err != nil || string(data) != "old\n" {
		t.Errorf("backup %s: %q, %v; want the old content", bak, data, err)
	}
	if name, ok := Leftover(filepath.Base(bak)); !ok || name != "change" {
		t.Errorf("Leftover(%q) = %q, %v", filepath.Base(bak), name, ok)
	}
	// Everything else was undone: put the one file back by hand and the
	// tree is as before.
	if err := os.Rename(bak, change); err != nil {
		t.Fatal(err)
	}
	sameTree(t, root, before)
}

func TestLeftover(t *testing.T) {
	for name, want := range map[string]string{
		".rules.nft.tmp-123":            "rules.nft",
		".agentbox.lock.bak-4294967295": "agentbox.lock",
		".x.tmp-0":                      "x",
		"..tmp-1":                       "",
		".x.tmp-":                       "",
		".x.tmp-12a":                    "",
		".x.old-1":                      "",
		"x.tmp-1":                       "",
		".x.tmp-12345678901":            "",
		".x.tmp-1.tmp-2":                "x.tmp-1",
	} {
		got, ok := Leftover(name)
		if got != want || ok != (want != "") {
			t.Errorf("Leftover(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	// Every name a transaction makes is a leftover of its file.
	for _, kind := range []string{"tmp", "bak"} {
		name := filepath.Base(siblingName("/d/devcontainer.json", kind))
		if of, ok := Leftover(name); !ok || of != "devcontainer.json" {
			t.Errorf("Leftover(%q) = %q, %v", name, of, ok)
		}
	}
}

// TestTxReadersSeeOldOrNew: while a transaction replaces a file, a reader
// sees the old content or the new, never no file (the backup is a hard
// link, so the file stays in place until the new one replaces it).
func TestTxReadersSeeOldOrNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	tx := &Tx{}
	tx.WriteFile(path, []byte("new"), 0o644)
	tx.Hook = func(op Op, p string) error {
		if op == OpRename || op == OpSyncDir {
			if data, err := os.ReadFile(path); err != nil || (string(data) != "old" && string(data) != "new") {
				t.Errorf("before %s: %q, %v", op, data, err)
			}
		}
		return nil
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
