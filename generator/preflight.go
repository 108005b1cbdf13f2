package generator

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbox-dev/agentbox/config"
)

// CheckGitDatabase checks, before the sandbox starts, that the project's
// .git is a directory of its own: the compose file mounts it read-only as
// the source of the agent's clone, and Docker follows a symlink wherever it
// points, so a .git that is a symlink (or a file: a worktree) is refused.
func CheckGitDatabase(dir string) error {
	p := filepath.Join(dir, ".git")
	fi, err := os.Lstat(p)
	switch {
	case os.IsNotExist(err) && !fileExists(filepath.Join(dir, config.ConfigFile)):
		return config.MissingConfig(dir) // not the project's directory at all
	case os.IsNotExist(err):
		return fmt.Errorf("%s: the project is not a git repository: the sandbox works in a clone of its .git (run \"git init\" and commit first)", displayPath(dir, ".git"))
	case err != nil:
		return err
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: the sandbox mounts the project's git database and refuses one that may point outside the project", displayPath(dir, ".git"))
	case !fi.IsDir():
		return fmt.Errorf("%s is a file (a git worktree or a submodule checkout): the sandbox needs the repository's own .git directory; run it from the main checkout", displayPath(dir, ".git"))
	}
	return nil
}

// fileExists reports whether path names something (a link counts).
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
