package atomicfile

// Names of the temporary and backup files beside a destination.

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// siblingName returns a fresh name beside path: .NAME.KIND-DIGITS.
func siblingName(path, kind string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+kind+"-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
}

// createSibling creates a new file beside path, named by siblingName, with
// mode 0600 until its content is complete.
func createSibling(path, kind string) (*os.File, error) {
	for range 1000 {
		f, err := os.OpenFile(siblingName(path, kind), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, &fs.PathError{Op: "createtemp", Path: path, Err: fs.ErrExist}
}

// Leftover reports whether name (a base name) is a temporary or backup file
// of a transaction, .NAME.tmp-DIGITS or .NAME.bak-DIGITS, and returns NAME.
// A transaction removes them before Commit returns; one is left behind only
// when the process dies while committing (or a backup cannot be deleted),
// and is then garbage: whatever the files hold, the backup is never read
// again.
func Leftover(name string) (of string, ok bool) {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 || !allDigits(rest[i+1:]) {
		return "", false
	}
	for _, kind := range []string{".tmp", ".bak"} {
		if of, ok := strings.CutSuffix(rest[:i], kind); ok && of != "" {
			return of, true
		}
	}
	return "", false
}

func allDigits(s string) bool {
	if s == "" || len(s) > 10 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
