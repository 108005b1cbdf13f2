package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// The load stage: agentbox.yaml read, decoded strictly
// and validated into a Config.

// Load reads and validates dir/agentbox.yaml, and returns where each
// key is written. Error messages name the file as dir/agentbox.yaml, so dir
// should be the path as the user wrote it.
func Load(dir string) (*Config, yamlpos.Positions, error) {
	file := filepath.Join(dir, ConfigFile)
	data, err := Read(filepath.Join(dir, ConfigFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, MissingConfig(dir)
		}
		return nil, nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return Decode(file, data, dir)
}

// MissingConfig is the error for a dir without agentbox.yaml. From a
// directory below a project's, it names the project's agentbox.yaml (the
// nearest one above dir within its git repository) instead of agentbox init.
func MissingConfig(dir string) error {
	file := filepath.Join(dir, ConfigFile)
	if up := configAbove(dir); up != "" {
		return fmt.Errorf("%s: no such file here, but %s is: run agentbox there, or with -C %s", file, filepath.Join(up, ConfigFile), up)
	}
	return fmt.Errorf("%s: no such file; run \"agentbox init\" to create one", file)
}

// configAbove returns the nearest directory above dir that holds
// agentbox.yaml, as a path from dir ("../.."): looked for up to the top of
// the git repository dir is in, and not at all outside one.
func configAbove(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	var found string
	rel := dir
	for {
		if _, err := os.Lstat(filepath.Join(abs, ".git")); err == nil {
			return found // the repository's top: the search ends here
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return "" // no repository around dir
		}
		abs, rel = parent, filepath.Join(rel, "..")
		if found == "" {
			if fi, err := os.Stat(filepath.Join(abs, ConfigFile)); err == nil && fi.Mode().IsRegular() {
				found = rel
			}
		}
	}
}

// Read reads the file at path, but no more than one byte past
// MaxFileSize: enough for Decode to say where the file passes it.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// Decode decodes agentbox.yaml from data strictly and validates it; file
// names it in errors, dir is the project directory the paths in it are
// relative to.
func Decode(file string, data []byte, dir string) (*Config, yamlpos.Positions, error) {
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
