package generator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentbox-dev/agentbox/internal/atomicfile"
)

// GitHubCI says what agentbox ci github writes.
type GitHubCI struct {
	// Dir is the project directory, as the user named it (-C).
	Dir string
	// Version is the version of agentbox the workflow installs.
	Version string
	// FailOn is FailOnWiden or "none" to set the workflow's option, "" to
	// keep what the workflow records.
	FailOn string
	// Force overwrites a workflow that agentbox did not write.
	Force bool
}

// WriteGitHubCI writes the workflow (GitHubWorkflow) and agentbox's block
// of .gitattributes at the root of the git repository holding the project,
// both or neither, and returns what changed. It refuses a project without
// agentbox.yaml, a symbolic link on the way to either file, and a workflow
// that agentbox did not write unless o.Force.
func WriteGitHubCI(o GitHubCI) ([]atomicfile.Change, error) {
	root, rel, err := ciProject(o.Dir)
	if err != nil {
		return nil, err
	}
	wfPath := filepath.Join(root, filepath.FromSlash(GitHubWorkflow))
	attrPath := filepath.Join(root, Gitattributes)
	workflow, err := o.workflow(wfPath, rel)
	if err != nil {
		return nil, err
	}
	oldAttr, err := readIfExists(attrPath)
	if err != nil {
		return nil, err
	}
	attr, err := MergeGitattributes(oldAttr, rel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", attrPath, err)
	}
	var tx atomicfile.Tx
	tx.WriteFile(wfPath, workflow, 0o644)
	tx.WriteFile(attrPath, attr, 0o644)
	return tx.Commit()
}

// ciProject is the root of the git repository holding the project in dir
// and the project's directory relative to it, once the project is known to
// have an agentbox.yaml and no symbolic link is on the way to the files ci
// writes.
func ciProject(dir string) (root, rel string, err error) {
	root, rel, err = RepoRoot(dir)
	if err != nil {
		return "", "", err
	}
	if err := ValidateCIDir(rel); err != nil {
		return "", "", err
	}
	if _, err := os.Stat(ConfigPath(dir)); err != nil {
		return "", "", fmt.Errorf("%s: %w; run agentbox init first", ConfigPath(dir), errors.Unwrap(err))
	}
	if err := atomicfile.RefuseLinks(root, ".github", ".github/workflows", GitHubWorkflow, Gitattributes); err != nil {
		return "", "", err
	}
	return root, rel, nil
}

// workflow renders the workflow at wfPath: refused over one agentbox did
// not write unless Force; its recorded options kept unless FailOn changes
// them.
func (o GitHubCI) workflow(wfPath, rel string) ([]byte, error) {
	old, err := readIfExists(wfPath)
	if err != nil {
		return nil, err
	}
	if old != nil && !IsCIWorkflow(old) && !o.Force {
		return nil, fmt.Errorf("%s exists and agentbox did not write it (its first line is not %q); use --force to overwrite it", wfPath, "# "+CIHeader)
	}
	failOn := ReadCIOptions(old)
	switch o.FailOn {
	case "none":
		failOn = ""
	case FailOnWiden:
		failOn = FailOnWiden
	}
	return RenderGitHubWorkflow(WorkflowOptions{Dir: rel, Version: o.Version, FailOn: failOn})
}

// RepoRoot finds the git repository holding dir: the nearest directory at
// or above it with a .git (a directory, or a file in a worktree). It returns
// the root as a path usable from here, and dir relative to it.
func RepoRoot(dir string) (root, rel string, err error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, syscall.ENOTDIR) {
			return "", "", fmt.Errorf("-C %s: not a directory", dir)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("-C %s: no such directory", dir)
		}
		return "", "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for r := abs; ; {
		if _, err := os.Lstat(filepath.Join(r, ".git")); err == nil {
			rel, err := filepath.Rel(r, abs)
			if err != nil {
				return "", "", err
			}
			up, _ := filepath.Rel(abs, r)
			return filepath.Join(dir, up), filepath.ToSlash(rel), nil
		}
		parent := filepath.Dir(r)
		if parent == r {
			return "", "", fmt.Errorf("-C %s: not in a git repository (no .git in it or above it); the workflow goes at the repository's root", dir)
		}
		r = parent
	}
}

// readIfExists reads a file, or returns nil when there is none.
func readIfExists(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
