// Package checkmemo remembers, in the user's cache directory, which
// generated files passed their ecosystem's check (generator's check stage),
// so that the same agentbox binary does not parse the same bytes twice:
// `generate --check` in a hook or CI, and every `up` or `run`, compile files
// that have not changed most of the time.
//
// A memo belongs to one binary, told by its executable's path, device,
// inode, size and modification time: a rebuilt or reinstalled agentbox
// starts a new one, so a stricter check is never skipped by an older
// one's word. An entry is an empty file named by the digest of what was
// checked; a failure is never remembered. The memo trusts the cache
// directory as the binary trusts its own installation: whoever can write
// either can change what agentbox does.
package checkmemo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// keep is how long the memo of a binary not run since is kept.
const keep = 30 * 24 * time.Hour

// Memo is the memo of the running binary; a nil Memo remembers nothing.
type Memo struct {
	dir string
}

// Open returns the running binary's memo, nil when the binary or the cache
// directory cannot be told.
func Open() *Memo {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	return open(exe, filepath.Join(cache, "agentbox", "checked"))
}

func open(exe, root string) *Memo {
	fi, err := os.Stat(exe)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	// Dev and Ino are in every Unix's Stat_t (the times' field names are
	// not: Mtim on Linux, Mtimespec on macOS).
	id := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d\x00%d\x00%d",
		exe, st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano()))
	return &Memo{dir: filepath.Join(root, hex.EncodeToString(id[:16]))}
}

// Passed says whether the check of key passed before.
func (m *Memo) Passed(key string) bool {
	if m == nil {
		return false
	}
	_, err := os.Lstat(filepath.Join(m.dir, key))
	return err == nil
}

// Pass remembers that the check of key passed. It fails silently: the memo
// only saves time.
func (m *Memo) Pass(key string) {
	if m == nil {
		return
	}
	if _, err := os.Lstat(m.dir); err != nil {
		if os.MkdirAll(m.dir, 0o700) != nil {
			return
		}
		m.prune()
	}
	if f, err := os.OpenFile(filepath.Join(m.dir, key), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	}
}

// prune removes the memos of other binaries not used for keep, when this
// binary makes its own.
func (m *Memo) prune() {
	root := filepath.Dir(m.dir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		if fi, err := e.Info(); err == nil && p != m.dir && time.Since(fi.ModTime()) > keep {
			os.RemoveAll(p)
		}
	}
}

// Key is the memo's name for a check of data under the given names (what
// the check reads besides data: its path, the directory it resolves
// against, the project): a digest, so no name reaches the file system.
func Key(data []byte, names ...string) string {
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%d:%s\x00", len(n), n)
	}
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}
