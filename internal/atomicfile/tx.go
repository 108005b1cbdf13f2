package atomicfile

// A transaction over several files: stage every new content beside its
// destination, then rename each into place keeping a backup of what was
// there, and on any failure put every backup back.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Op names one step of a transaction on disk, for Tx.Hook.
type Op string

// The steps of Tx.Commit, in the order they come for one file. Staging
// (mkdir, create, write) changes nothing a reader of the destinations sees;
// link, backup, rename and remove do; syncdir makes them durable. restore
// and unlink undo them when a later step fails.
const (
	OpMkdir   Op = "mkdir"   // create a missing parent directory
	OpCreate  Op = "create"  // create a temporary file beside the destination
	OpWrite   Op = "write"   // write, chmod, fsync and close it
	OpLink    Op = "link"    // hard-link the file being replaced to a backup name (on failure: OpBackup)
	OpBackup  Op = "backup"  // rename the file being replaced to a backup name
	OpRename  Op = "rename"  // rename the temporary file over the destination
	OpRemove  Op = "remove"  // rename a file being removed to a backup name
	OpSyncDir Op = "syncdir" // fsync a directory whose entries changed
	OpRestore Op = "restore" // rollback: rename a backup back into place
	OpUnlink  Op = "unlink"  // rollback: remove a file the transaction created
)

// Kinds of Change.
const (
	Create = "create"
	Update = "update"
	Remove = "remove"
)

// Change is one file that a committed transaction created, updated or
// removed.
type Change struct {
	Path string
	Kind string // Create, Update or Remove
}

// Tx is a set of file writes and removals that happen all together or not
// at all. WriteFile and Remove only record; Commit does the work:
//
//  1. stage: every new content goes to a temporary file in its
//     destination's directory (same file system, so the rename is atomic),
//     with its mode, fsynced; missing directories are created. A directory
//     where a file should be, or any other failure, stops here.
//  2. commit: each file being replaced is first hard-linked to a backup
//     name (renamed when the file system has no hard links), then the
//     temporary file is renamed over it, so a reader sees the old or the
//     new content; each file being removed is renamed to a backup name.
//     Then every directory touched is fsynced.
//  3. on success the backups are deleted. On any failure every step done
//     is undone in reverse order (backups renamed back, created files and
//     directories removed), temporary files are removed, and the error says
//     what, if anything, could not be undone and where its backup is.
//
// Files whose content and mode are already right are not touched. A
// symbolic link at a destination is replaced, not followed. Temporary files
// are named .NAME.tmp-DIGITS and backups .NAME.bak-DIGITS beside NAME (see
// Leftover): only a process that dies while committing leaves one behind,
// and then the files may be a mix of old and new.
type Tx struct {
	// Hook, if set, is called before each step with the step and the file
	// or directory it concerns; an error it returns fails the step as if
	// the system call had. Tests inject failures with it.
	Hook func(op Op, path string) error

	files []*txFile
}

type txFile struct {
	path   string
	data   []byte
	perm   fs.FileMode
	remove bool

	// Set by Commit.
	skip    bool   // already right: nothing to do
	existed bool   // something was at path: the change is an update or a removal
	regular bool   // and it was a regular file, which a hard link can back up
	tmp     string // the staged content, until renamed into place
	bak     string // the backup of what was at path
	state   txState
}

// txState is how far a file got in the commit, and so what undoes it.
type txState int

const (
	staged txState = iota // nothing at path changed yet
	linked                // bak is a second link to path's file
	moved                 // path was renamed to bak
	placed                // tmp was renamed to path (bak holds the old file, if any)
)

// WriteFile records that path should hold data with exactly perm.
func (tx *Tx) WriteFile(path string, data []byte, perm fs.FileMode) {
	tx.files = append(tx.files, &txFile{path: path, data: data, perm: perm})
}

// Remove records that the file (not directory) at path should be removed.
func (tx *Tx) Remove(path string) {
	tx.files = append(tx.files, &txFile{path: path, remove: true})
}

// Commit makes every recorded change, in the order recorded, or none of
// them, and returns the changes made.
func (tx *Tx) Commit() ([]Change, error) {
	if err := tx.validate(); err != nil {
		return nil, err
	}
	c := &committer{tx: tx, known: map[string]bool{}}
	err := c.stage()
	if err == nil {
		err = c.apply()
	}
	if err == nil {
		err = c.syncDirs()
	}
	if err != nil {
		if undo := c.rollback(); len(undo) > 0 {
			err = fmt.Errorf("%w; undoing it failed too, so these are not as they were: %s", err, strings.Join(undo, "; "))
		}
		return nil, err
	}
	return c.finish(), nil
}

// validate refuses what Commit could not do: a path given twice, a mode
// with bits other than permissions.
func (tx *Tx) validate() error {
	seen := map[string]bool{}
	for _, f := range tx.files {
		p := filepath.Clean(f.path)
		if seen[p] {
			return fmt.Errorf("writing %s: named twice in one transaction", f.path)
		}
		seen[p] = true
		if f.perm&^fs.ModePerm != 0 {
			return fmt.Errorf("writing %s: mode %v has bits other than permissions", f.path, f.perm)
		}
	}
	return nil
}

// committer is the state of one Commit.
type committer struct {
	tx    *Tx
	known map[string]bool // directories known to exist
	dirs  []string        // directories created, parents first
}

func (c *committer) step(op Op, path string) error {
	if c.tx.Hook == nil {
		return nil
	}
	return c.tx.Hook(op, path)
}

// stage checks every destination and writes every new content to a
// temporary file beside it.
func (c *committer) stage() error {
	for _, f := range c.tx.files {
		verb := "writing"
		if f.remove {
			verb = "removing"
		}
		if err := c.stageFile(f); err != nil {
			return fmt.Errorf("%s %s: %w", verb, f.path, err)
		}
	}
	return nil
}

func (c *committer) stageFile(f *txFile) error {
	fi, err := os.Lstat(f.path)
	switch {
	case err == nil && fi.IsDir():
		return syscall.EISDIR
	case err == nil:
		f.existed, f.regular = true, fi.Mode().IsRegular()
	case f.remove || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)):
		return err
	}
	if f.remove {
		return nil
	}
	if f.regular {
		same, err := sameContent(f.path, fi, f.data, f.perm)
		if err != nil {
			return err
		}
		if f.skip = same; same {
			return nil
		}
	}
	if err := c.mkdirs(filepath.Dir(f.path)); err != nil {
		return err
	}
	return c.writeTemp(f)
}

// mkdirs creates dir and its missing parents, remembering each it created.
func (c *committer) mkdirs(dir string) error {
	if c.known[dir] {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		c.known[dir] = true
		return nil
	case err == nil:
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := c.mkdirs(parent); err != nil {
			return err
		}
	}
	if err := c.step(OpMkdir, dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	c.known[dir] = true
	c.dirs = append(c.dirs, dir)
	return nil
}

// writeTemp writes f's content to a new temporary file beside f.path, with
// its mode, and fsyncs it.
func (c *committer) writeTemp(f *txFile) error {
	if err := c.step(OpCreate, f.path); err != nil {
		return err
	}
	tmp, err := createSibling(f.path, "tmp")
	if err != nil {
		return err
	}
	f.tmp = tmp.Name()
	err = c.step(OpWrite, f.path)
	if err == nil {
		_, err = tmp.Write(f.data)
	}
	if err == nil {
		err = tmp.Chmod(f.perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	return err
}

// apply puts every staged file in place and moves every removed file to a
// backup, keeping a backup of every file replaced.
func (c *committer) apply() error {
	for _, f := range c.tx.files {
		if f.skip {
			continue
		}
		var err error
		switch {
		case f.remove:
			err = c.moveAside(f, OpRemove)
		case f.existed:
			err = c.backup(f)
		}
		if err == nil && !f.remove {
			if err = c.step(OpRename, f.path); err == nil {
				err = os.Rename(f.tmp, f.path)
			}
			if err == nil {
				f.tmp, f.state = "", placed
			}
		}
		if err != nil {
			if f.remove {
				return fmt.Errorf("removing %s: %w", f.path, err)
			}
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return nil
}

// backup keeps the file at f.path under a backup name: a hard link when it
// is a regular file and the file system allows it (the file stays in place
// until the new one replaces it), else a rename.
func (c *committer) backup(f *txFile) error {
	if f.regular {
		bak := siblingName(f.path, "bak")
		if c.step(OpLink, f.path) == nil && os.Link(f.path, bak) == nil {
			f.bak, f.state = bak, linked
			return nil
		}
	}
	return c.moveAside(f, OpBackup)
}

// moveAside renames the file at f.path to a backup name.
func (c *committer) moveAside(f *txFile, op Op) error {
	if err := c.step(op, f.path); err != nil {
		return err
	}
	bak := siblingName(f.path, "bak")
	if err := os.Rename(f.path, bak); err != nil {
		return err
	}
	f.bak, f.state = bak, moved
	return nil
}

// touchedDirs lists, sorted, the directories whose entries the commit
// changed: those of the files changed and the parents of those created.
func (c *committer) touchedDirs() []string {
	var dirs []string
	for _, f := range c.tx.files {
		if !f.skip {
			dirs = append(dirs, filepath.Dir(f.path))
		}
	}
	for _, d := range c.dirs {
		dirs = append(dirs, filepath.Dir(d))
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// syncDirs makes the renames durable.
func (c *committer) syncDirs() error {
	for _, d := range c.touchedDirs() {
		err := c.step(OpSyncDir, d)
		if err == nil {
			err = syncDir(d)
		}
		if err != nil {
			return fmt.Errorf("syncing directory %s: %w", d, err)
		}
	}
	return nil
}

// rollback undoes every step done, in reverse order, and removes the
// temporary files and the directories created. It returns what it could
// not undo, with where the previous content is.
func (c *committer) rollback() []string {
	var failed []string
	for _, f := range slices.Backward(c.tx.files) {
		if msg := c.undo(f); msg != "" {
			failed = append(failed, msg)
		}
		if f.tmp != "" {
			if err := os.Remove(f.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				failed = append(failed, fmt.Sprintf("temporary file %s left behind: %v", f.tmp, err))
			}
		}
	}
	for _, d := range slices.Backward(c.dirs) {
		if err := os.Remove(d); err != nil {
			failed = append(failed, fmt.Sprintf("directory %s left behind: %v", d, err))
		}
	}
	for _, d := range c.touchedDirs() {
		syncDir(d) // best effort: the undo is as durable as the disk allows
	}
	return failed
}

// undo puts f.path back as it was before the commit, or says why not.
func (c *committer) undo(f *txFile) string {
	var err error
	switch {
	case f.state == linked:
		err = os.Remove(f.bak) // path still holds the file
	case f.state == moved || (f.state == placed && f.bak != ""):
		if err = c.step(OpRestore, f.path); err == nil {
			err = os.Rename(f.bak, f.path)
		}
		if err != nil {
			return fmt.Sprintf("%s could not be restored (%v): its previous content is in %s", f.path, err, f.bak)
		}
	case f.state == placed:
		if err = c.step(OpUnlink, f.path); err == nil {
			err = os.Remove(f.path)
		}
		if err != nil {
			return fmt.Sprintf("%s, which did not exist before, could not be removed: %v", f.path, err)
		}
	}
	if err != nil {
		return fmt.Sprintf("backup %s left behind: %v", f.bak, err)
	}
	return ""
}

// finish deletes the backups of a committed transaction and lists its
// changes. A backup that cannot be deleted stays, harmlessly: see Leftover.
func (c *committer) finish() []Change {
	var changes []Change
	for _, f := range c.tx.files {
		if f.skip {
			continue
		}
		if f.bak != "" {
			os.Remove(f.bak)
		}
		kind := Create
		switch {
		case f.remove:
			kind = Remove
		case f.existed:
			kind = Update
		}
		changes = append(changes, Change{f.path, kind})
	}
	return changes
}
