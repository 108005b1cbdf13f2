package generator

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/atomicfile"
	"github.com/agentbox-dev/agentbox/internal/checks"
	"github.com/agentbox-dev/agentbox/internal/udiff"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// Load reads and validates dir/agentbox.yaml. Error messages name the file
// as dir/agentbox.yaml, so dir should be the path as the user wrote it.
func Load(dir string) (*Config, error) {
	file := displayPath(dir, ConfigFile)
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file; run \"agentbox init\" to create one", file)
		}
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	cfg, _, err := decodeConfig(file, data, dir)
	return cfg, err
}

func decodeConfig(file string, data []byte, dir string) (*Config, yamlpos.Positions, error) {
	var w wireFile
	pos, err := yamlpos.Decode(file, data, &w)
	if err != nil {
		return nil, pos, err
	}
	errs := &yamlpos.Errors{File: file}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, pos, err
	}
	cfg := validateConfig(&w, pos, errs, abs)
	if err := errs.Err(); err != nil {
		return nil, pos, err
	}
	return cfg, pos, nil
}

// Validate loads dir/agentbox.yaml and checks that every path the sandbox
// mounts stays inside the project (CheckMounts).
func Validate(dir string) (*Config, error) {
	cfg, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return cfg, CheckMounts(dir, cfg)
}

// Build compiles dir/agentbox.yaml and dir/agentbox.lock into the files of the
// sandbox, and checks each with its ecosystem's parser and every path the
// sandbox mounts (CheckMounts). It writes nothing.
func Build(dir string) (map[string][]byte, error) {
	cfg, files, err := Compile(dir)
	if err != nil {
		return nil, err
	}
	if err := CheckMounts(dir, cfg); err != nil {
		return nil, err
	}
	return files, nil
}

// Compile is Build without CheckMounts that also returns the configuration
// it compiled, for callers that need both without loading agentbox.yaml
// twice. Commands that start the sandbox call CheckMounts themselves; those
// that only stop or inspect it (down, logs) must work whatever links the
// agent left behind.
func Compile(dir string) (*Config, map[string][]byte, error) {
	cfg, lock, err := loadProject(dir)
	if err != nil {
		return nil, nil, err
	}
	files, err := compile(dir, cfg, lock)
	return cfg, files, err
}

// loadProject reads agentbox.yaml and, when there is one, agentbox.lock.
func loadProject(dir string) (*Config, *images.Lock, error) {
	cfg, err := Load(dir)
	if err != nil {
		return nil, nil, err
	}
	lock, err := readLock(dir)
	return cfg, lock, err
}

// compile plans, renders and checks cfg with lock.
func compile(dir string, cfg *Config, lock *images.Lock) (map[string][]byte, error) {
	errs := &yamlpos.Errors{File: displayPath(dir, ConfigFile)}
	p := plan(cfg, lock, dir, errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	files, err := render(p)
	if err != nil {
		return nil, fmt.Errorf("internal error (please report it): %w", err)
	}
	if err := check(files, dir, p.Name); err != nil {
		return nil, fmt.Errorf("internal error: a generated file failed its check (please report it): %w", err)
	}
	return files, nil
}

func readLock(dir string) (*images.Lock, error) {
	file := displayPath(dir, images.LockFile)
	data, err := os.ReadFile(filepath.Join(dir, images.LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return images.ParseLock(file, data)
}

// check runs every generated file through the parser of its ecosystem.
func check(files map[string][]byte, dir, name string) error {
	abs, err := filepath.Abs(filepath.Join(dir, OutDir))
	if err != nil {
		return err
	}
	for _, path := range sortedPaths(files) {
		data := files[path]
		var err error
		switch {
		case path == ComposeFile:
			err = checks.Compose(data, abs, name)
		case strings.HasSuffix(path, ".Dockerfile"):
			err = checks.Dockerfile(data)
		case strings.HasSuffix(path, ".sh"):
			err = checks.Shell(data, path)
		case path == DevcontainerFile:
			err = checks.Devcontainer(data)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !bytes.Contains(firstLines(data), []byte(Header)) {
			return fmt.Errorf("%s: missing the generated-file header", path)
		}
	}
	return nil
}

// Change is one file that differs between the generated set and the disk.
type Change struct {
	Path string
	Kind string // "create", "update" or "remove"
}

// Write writes files under dir: only changed files, atomically, and removes
// stale files that agentbox generated before and no longer produces. It
// refuses to overwrite a file that agentbox did not generate.
func Write(dir string, files map[string][]byte) ([]Change, error) {
	if err := checkOutputPaths(dir, files); err != nil {
		return nil, err
	}
	stale, err := staleFiles(dir, files)
	if err != nil {
		return nil, err
	}
	if err := checkOwned(dir, files); err != nil {
		return nil, err
	}
	var changes []Change
	for _, path := range sortedPaths(files) {
		full := filepath.Join(dir, path)
		_, statErr := os.Stat(full)
		changed, err := atomicfile.WriteFile(full, files[path], perm(path))
		if err != nil {
			return changes, fmt.Errorf("writing %s: %w", displayPath(dir, path), err)
		}
		if changed {
			kind := "update"
			if statErr != nil {
				kind = "create"
			}
			changes = append(changes, Change{path, kind})
		}
	}
	for _, path := range stale {
		if err := os.Remove(filepath.Join(dir, path)); err != nil {
			return changes, fmt.Errorf("removing stale %s: %w", displayPath(dir, path), err)
		}
		changes = append(changes, Change{path, "remove"})
	}
	return changes, nil
}

// checkOutputPaths refuses to write or compare through a symbolic link:
// every component of every generated path below dir must be a directory or
// a regular file (or not exist yet), so that agentbox writes only inside the
// project. Each link is reported once.
func checkOutputPaths(dir string, files map[string][]byte) error {
	var errs []error
	seen := map[string]bool{}
	for _, path := range sortedPaths(files) {
		link, target, err := firstSymlink(dir, path)
		if err != nil {
			return fmt.Errorf("checking %s: %w", displayPath(dir, path), err)
		}
		if link != "" && !seen[link] {
			seen[link] = true
			errs = append(errs, fmt.Errorf("refusing to write %s: %s is a symbolic link (to %+q): agentbox writes only inside the project, never through a link; replace the link with a directory (or remove it) and run again",
				displayPath(dir, path), displayPath(dir, link), target))
		}
	}
	return errors.Join(errs...)
}

// checkOwned refuses files that exist on disk but were not generated by
// agentbox: a user's own devcontainer.json is never overwritten.
func checkOwned(dir string, files map[string][]byte) error {
	for _, path := range sortedPaths(files) {
		old, err := os.ReadFile(filepath.Join(dir, path))
		if err == nil && !ownedByAgentbox(old) {
			return fmt.Errorf("refusing to overwrite %s: agentbox did not generate it; move it away and run again", displayPath(dir, path))
		}
	}
	return nil
}

// Diff compares files with the disk and returns a unified diff of missing,
// changed and extra (stale) files; "" means no drift.
func Diff(dir string, files map[string][]byte) (string, error) {
	if err := checkOutputPaths(dir, files); err != nil {
		return "", err
	}
	stale, err := staleFiles(dir, files)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, path := range sortedPaths(files) {
		full := filepath.Join(dir, path)
		old, err := os.ReadFile(full)
		missing := errors.Is(err, fs.ErrNotExist)
		if err != nil && !missing {
			return "", fmt.Errorf("reading %s: %w", displayPath(dir, path), err)
		}
		b.WriteString(udiff.Unified(path, old, files[path], missing, false))
		if fi, err := os.Stat(full); err == nil && fi.Mode().Perm() != perm(path) {
			fmt.Fprintf(&b, "mode %s: have %v, want %v\n", path, fi.Mode().Perm(), perm(path))
		}
	}
	for _, path := range stale {
		old, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			return "", err
		}
		b.WriteString(udiff.Unified(path, old, nil, false, true))
	}
	return b.String(), nil
}

// staleFiles lists generated files under .agentbox/ that files no longer has.
func staleFiles(dir string, files map[string][]byte) ([]string, error) {
	var stale []string
	root := filepath.Join(dir, OutDir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipDir
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if _, ok := files[rel]; ok {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if ownedByAgentbox(data) {
			stale = append(stale, rel)
		}
		return nil
	})
	sort.Strings(stale)
	return stale, err
}

func perm(path string) fs.FileMode {
	if strings.HasSuffix(path, ".sh") {
		return 0o755
	}
	return 0o644
}

// ownedByAgentbox reports whether a file on disk was generated by agentbox
// (by any version: the header's start is enough), and so may be replaced or
// removed.
func ownedByAgentbox(data []byte) bool {
	return bytes.Contains(firstLines(data), []byte("Code generated by agentbox"))
}

func firstLines(data []byte) []byte {
	for i, n := 0, 0; i < len(data); i++ {
		if data[i] == '\n' {
			if n++; n == 3 {
				return data[:i]
			}
		}
	}
	return data
}

func sortedPaths(files map[string][]byte) []string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// displayPath names a file under dir as the user would: relative to where
// they ran the command.
func displayPath(dir, file string) string {
	if dir == "" || dir == "." {
		return file
	}
	return filepath.Join(dir, file)
}
