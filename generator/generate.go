package generator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
	cfg, _, err := loadConfig(dir)
	return cfg, err
}

// loadConfig is Load, also returning where each key is written.
func loadConfig(dir string) (*Config, yamlpos.Positions, error) {
	file := displayPath(dir, ConfigFile)
	data, err := readConfig(filepath.Join(dir, ConfigFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: no such file; run \"agentbox init\" to create one", file)
		}
		return nil, nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return decodeConfig(file, data, dir)
}

// readConfig reads the file at path, but no more than one byte past
// MaxFileSize: enough for decodeConfig to say where the file passes it.
func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

func decodeConfig(file string, data []byte, dir string) (*Config, yamlpos.Positions, error) {
	if len(data) > MaxFileSize {
		errs := &yamlpos.Errors{File: file}
		errs.Add(yamlpos.PosAt(data, MaxFileSize), "", "the file is larger than 1 MiB (%d bytes), the most agentbox reads; it passes the limit here", MaxFileSize)
		return nil, nil, errs.Err()
	}
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
	p := plan(cfg, lock, errs)
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

// Write writes files under dir: only changed files, and removes stale
// files that agentbox generated before and no longer produces, all in one
// transaction: on any failure no file has changed. Before writing anything
// it refuses a symbolic link on the way, a file agentbox did not generate
// in .agentbox/ (or a Dev Container configuration or .env in
// .devcontainer/), and overwriting a file agentbox did not generate.
func Write(dir string, files map[string][]byte) ([]Change, error) {
	return writeAll(dir, nil, files, nil)
}

// writeAll is Write, and WriteBump when lock is not nil: agentbox.lock,
// files and the stale files' removal in one atomicfile.Tx. hook is the
// Tx's, for tests.
func writeAll(dir string, lock []byte, files map[string][]byte, hook func(atomicfile.Op, string) error) ([]Change, error) {
	stale, err := preflight(dir, files)
	if err != nil {
		return nil, err
	}
	tx := &atomicfile.Tx{Hook: hook}
	rel := map[string]string{} // full path -> path relative to dir
	add := func(path string) string {
		full := filepath.Join(dir, path)
		rel[full] = path
		return full
	}
	if lock != nil {
		tx.WriteFile(add(images.LockFile), lock, 0o644)
	}
	for _, path := range sortedPaths(files) {
		tx.WriteFile(add(path), files[path], perm(path))
	}
	for _, path := range stale {
		tx.Remove(add(path))
	}
	done, err := tx.Commit()
	if err != nil {
		return nil, err
	}
	changes := make([]Change, len(done))
	for i, c := range done {
		changes[i] = Change{rel[c.Path], c.Kind}
	}
	return changes, nil
}

// Diff compares files with the disk and returns a unified diff of missing,
// changed and extra files, extra being stale (generated before) or foreign
// (not generated by agentbox, where Write refuses it; named with the
// reason); "" means no drift. It refuses a symbolic link on the way.
func Diff(dir string, files map[string][]byte) (string, error) {
	if err := checkOutputPaths(dir, files); err != nil {
		return "", err
	}
	stale, foreign, err := extraFiles(dir, files)
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
	for _, f := range foreign {
		fmt.Fprintf(&b, "extra %s\n", f.describe(""))
		if f.Mode.IsRegular() {
			old, err := os.ReadFile(filepath.Join(dir, f.Path))
			if err != nil {
				return "", err
			}
			b.WriteString(udiff.Unified(f.Path, old, nil, false, true))
		}
	}
	return b.String(), nil
}

func perm(path string) fs.FileMode {
	if strings.HasSuffix(path, ".sh") {
		return 0o755
	}
	return 0o644
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
