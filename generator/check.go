package generator

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/checks"
)

// The check stage: every rendered file through its ecosystem's parser
// before anything is written.

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
		case strings.HasPrefix(path, ProfilesDir+"/") && strings.HasSuffix(path, ".compose.yml"):
			err = checks.Compose(data, filepath.Join(abs, strings.TrimPrefix(ProfilesDir, OutDir+"/")), name)
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
