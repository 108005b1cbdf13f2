package generator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// MountSourceError says why a project path may not be bind-mounted into the
// sandbox.
type MountSourceError struct {
	Path    string // the mount source, relative to the project, as given
	Link    string // the symbolic link met on its way, relative to the project
	Target  string // what Link points to, as written in the link
	Outside bool   // following Link leads outside the project
	Err     error  // instead of a link: the path is not a clean path inside the project, or it cannot be read
}

func (e *MountSourceError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("mount source %+q: %v", e.Path, e.Err)
	}
	what := fmt.Sprintf("%+q is a symbolic link", e.Path)
	if e.Link != e.Path {
		what = fmt.Sprintf("%+q passes through the symbolic link %+q", e.Path, e.Link)
	}
	if e.Outside {
		if e.Link == e.Path {
			what += fmt.Sprintf(" to %+q", e.Target)
		} else {
			what += fmt.Sprintf(" (to %+q)", e.Target)
		}
		return what + ", which leads outside the project: Docker would mount that host path into the sandbox"
	}
	return what + fmt.Sprintf(" (to %+q): agentbox mounts no path through a link, which Docker follows on the host and again in the container and which can change after generate; name the real path, or replace the link with what it points to", e.Target)
}

// MountSourceErrors is every refused path of one CheckMountSources call.
type MountSourceErrors []*MountSourceError

func (es MountSourceErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// CheckMountSources checks paths of the project directory projectDir that
// are to be bind-mounted into the sandbox, each given relative to the project
// as a clean path ("docs/adr", ".git/hooks"). Docker resolves a bind source
// with symbolic links followed, so a link ("docs" -> /etc, or -> ../../..)
// would put a host directory in the sandbox. A path is refused when any
// component below the project directory is a symbolic link, whether it leads
// outside (MountSourceError.Outside) or not; a path that does not exist yet
// passes as long as no existing component is a link. The project directory
// itself may be reached through links.
//
// It returns nil, a MountSourceErrors with one entry per refused path, or
// another error when the project directory cannot be resolved. Links can
// change at any time, so commands that start the sandbox check again first.
func CheckMountSources(projectDir string, rel []string) error {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("resolving the project directory: %w", err)
	}
	var errs MountSourceErrors
	for _, p := range rel {
		if e := checkMountSource(root, p); e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func checkMountSource(root, rel string) *MountSourceError {
	if !filepath.IsLocal(rel) || filepath.Clean(rel) != rel || rel == "." {
		return &MountSourceError{Path: rel, Err: errors.New("not a clean relative path inside the project")}
	}
	link, target, err := firstSymlink(root, rel)
	switch {
	case err != nil:
		return &MountSourceError{Path: rel, Err: err}
	case link == "":
		return nil
	}
	e := &MountSourceError{Path: rel, Link: link, Target: target}
	dest := target
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(root, filepath.Dir(link), dest)
	}
	if resolved, err := resolvePath(dest); err == nil {
		e.Outside = !within(root, resolved)
	} else {
		e.Outside = !within(root, filepath.Clean(dest)) // a loop: judge the first hop
	}
	return e
}

// firstSymlink returns the first component of rel, below root, that is a
// symbolic link (relative to root) and its target; "" when there is none. A
// component that does not exist ends the walk: nothing below it exists.
func firstSymlink(root, rel string) (link, target string, err error) {
	cur := root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		switch {
		case notExist(err):
			return "", "", nil
		case err != nil:
			return "", "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(cur)
			return strings.Join(parts[:i+1], "/"), target, err
		}
	}
	return "", "", nil
}

// maxLinks bounds the links resolvePath follows, as the kernel's ELOOP does.
const maxLinks = 40

// resolvePath returns the absolute path with every symbolic link followed,
// as the kernel would, and whatever does not exist kept as written (so that a
// dangling link is judged by where it points).
func resolvePath(path string) (string, error) {
	cur := "/"
	todo := strings.Split(path, "/")
	for links := 0; len(todo) > 0; {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		switch {
		case notExist(err):
			return filepath.Join(append([]string{next}, todo...)...), nil
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}

// within reports whether path is root or below it; both are clean and
// absolute.
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, strings.TrimSuffix(root, "/")+"/")
}

func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// CheckMounts checks every bind source of the sandbox of the project
// directory dir with CheckMountSources: the workspace.readonly entries are
// reported at their place in agentbox.yaml, the paths agentbox mounts by
// itself (.git/hooks, .agentbox, ...) by their path. Run it before anything
// is generated or started: links can change at any time.
func CheckMounts(dir string, cfg *config.Config) error {
	var rels []string
	byRel := map[string]Mount{}
	for _, m := range mounts(cfg, WorkspaceVolume, "") {
		if m.Type == "bind" && m.Rel() != "." {
			rels = append(rels, m.Rel())
			byRel[m.Rel()] = m
		}
	}
	err := CheckMountSources(dir, rels)
	var list MountSourceErrors
	if !errors.As(err, &list) {
		return err
	}
	positioned := &yamlpos.Errors{File: displayPath(dir, config.ConfigFile)}
	var others MountSourceErrors
	for _, e := range list {
		if m := byRel[e.Path]; m.Key != "" {
			positioned.Add(m.Pos, m.Key, "%v", e)
			continue
		}
		named := *e
		named.Path = displayPath(dir, e.Path)
		if e.Link != "" {
			named.Link = displayPath(dir, e.Link)
		}
		others = append(others, &named)
	}
	if len(others) == 0 {
		return positioned.Err()
	}
	if len(positioned.List) == 0 {
		return others
	}
	return errors.Join(positioned.Err(), others)
}
