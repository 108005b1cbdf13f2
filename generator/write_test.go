package generator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/atomicfile"
	"github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// writeProject is a project of the agent-claude golden case, generated
// (with initial, or with what generate returns when initial is nil), then
// changed so that the next write creates, updates and removes files: the
// policy changes (rules.nft, dnsmasq.conf), .devcontainer/ is gone, a stale
// file was generated before, and entrypoint.sh lost its mode. It returns
// the project's directory and the files first generated.
func writeProject(t *testing.T, initial map[string][]byte) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{config.ConfigFile, lockfile.File} {
		data, err := os.ReadFile(filepath.Join(goldenDir, "agent-claude", name))
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(dir, name), string(data), 0o644)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if initial == nil {
		var err error
		if initial, err = generate(dir); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Write(dir, initial); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, config.ConfigFile), "agent: claude\nnetwork: {domains: [example.com]}\n", 0o644)
	mustWrite(t, filepath.Join(dir, OutDir, "old.conf"), "# "+Header+"\n", 0o644)
	if err := os.RemoveAll(filepath.Join(dir, DevcontainerDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, OutDir, "workspace.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, initial
}

func mustWrite(t *testing.T, path, data string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
}

// newLock is the golden case's lock with the agent CLI at another version.
func newLock(t *testing.T, dir string) []byte {
	t.Helper()
	old, err := os.ReadFile(filepath.Join(dir, lockfile.File))
	if err != nil {
		t.Fatal(err)
	}
	lock := strings.ReplaceAll(string(old), `"2.0.14"`, `"2.1.0"`)
	if lock == string(old) {
		t.Fatal("the golden lock has no 2.0.14")
	}
	return []byte(lock)
}

// writeCase is what one test writes: what generate writes, or what bump
// writes (the new lock with the files rendered from it).
func writeCase(t *testing.T, dir string, bump bool) (lock []byte, files map[string][]byte) {
	t.Helper()
	if !bump {
		files, err := generate(dir)
		if err != nil {
			t.Fatal(err)
		}
		return nil, files
	}
	lock = newLock(t, dir)
	parsed, err := lockfile.Parse(lockfile.File, lock)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(dir, CompileOptions{Lock: parsed})
	if err != nil {
		t.Fatal(err)
	}
	return lock, c.Files
}

// TestWriteIsAllOrNothing fails each step of generate's write, and of
// bump's (the lock and the files together), in turn: afterwards the project
// is exactly as it was. Without a failure, every change is made.
func TestWriteIsAllOrNothing(t *testing.T) {
	for _, bump := range []bool{false, true} {
		name := "generate"
		if bump {
			name = "bump"
		}
		t.Run(name, func(t *testing.T) {
			var steps []string
			dir, initial := writeProject(t, nil)
			lock, files := writeCase(t, dir, bump) // the same in every copy: no absolute path in any file
			changes, err := writeAll(dir, lock, files, func(op atomicfile.Op, path string) error {
				rel, _ := filepath.Rel(dir, path)
				steps = append(steps, string(op)+" "+rel)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("changes %v\n%d steps %q", changes, len(steps), steps)
			if diff, err := Diff(dir, files); err != nil || diff != "" {
				t.Fatalf("after the write: %v\n%s", err, diff)
			}
			if data, _ := os.ReadFile(filepath.Join(dir, lockfile.File)); bump && string(data) != string(lock) {
				t.Errorf("the lock was not written")
			}
			for n, step := range steps {
				t.Run(fmt.Sprintf("%d %s", n+1, step), func(t *testing.T) {
					dir, _ := writeProject(t, initial)
					before := golden.Snapshot(t, dir)
					injected := errors.New("injected failure")
					calls := 0
					changes, err := writeAll(dir, lock, files, func(op atomicfile.Op, path string) error {
						if calls++; calls == n+1 {
							return injected
						}
						return nil
					})
					if op, _, _ := strings.Cut(step, " "); op == string(atomicfile.OpLink) {
						if err != nil { // the backup is made by a rename instead
							t.Errorf("a failed hard link failed the write: %v", err)
						}
						return
					}
					if !errors.Is(err, injected) || changes != nil {
						t.Fatalf("write = %v, %v; want the injected failure and no changes", changes, err)
					}
					if d := golden.SnapshotDiff(before, golden.Snapshot(t, dir)); d != "" {
						t.Errorf("the failed write changed the project:\n%s", d)
					}
				})
			}
		})
	}
}

// TestWriteAfterACrash: a write killed at any step (here the hook panics,
// so nothing is undone) leaves temporary files, backups and a mix of old
// and new files; running the same command again finishes the job: the
// files are current, the lock is bump's, and nothing is left over.
func TestWriteAfterACrash(t *testing.T) {
	for _, bump := range []bool{false, true} {
		dir, initial := writeProject(t, nil)
		lock, files := writeCase(t, dir, bump)
		steps := 0
		if _, err := writeAll(dir, lock, files, func(atomicfile.Op, string) error { steps++; return nil }); err != nil {
			t.Fatal(err)
		}
		for n := range steps {
			t.Run(fmt.Sprintf("bump=%v/%d", bump, n+1), func(t *testing.T) {
				dir, _ := writeProject(t, initial)
				crash(t, func() {
					calls := 0
					writeAll(dir, lock, files, func(atomicfile.Op, string) error {
						if calls++; calls == n+1 {
							panic("killed")
						}
						return nil
					})
				})
				if _, err := writeAll(dir, lock, files, nil); err != nil {
					t.Fatalf("the write after the crash: %v", err)
				}
				if diff, err := Diff(dir, files); err != nil || diff != "" {
					t.Errorf("after the second write: %v\n%s", err, diff)
				}
				if data, _ := os.ReadFile(filepath.Join(dir, lockfile.File)); bump && string(data) != string(lock) {
					t.Error("the lock is not bump's")
				}
				for p := range golden.Snapshot(t, dir) {
					if _, ok := atomicfile.Leftover(filepath.Base(p)); ok {
						t.Errorf("%s is left over", p)
					}
				}
			})
		}
	}
}

// crash runs f, which must panic, as a process killed in the middle.
func crash(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatal("no crash")
		}
	}()
	f()
}
