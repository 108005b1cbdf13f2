// Package direct is the direct workspace of a task (agentbox run
// --workspace direct): the task works on the project directory itself
// rather than in its own clone. It plans the task's mounts (Plan) and, when
// the task ends, disarms what the agent made (Disarm); the Compose backend
// of package task mounts and collects it. What keeps the agent's writes
// from running code on the host:
//
//   - .git is mounted read-only (and, being a mount point, cannot be renamed
//     or replaced), so are every git directory already in the work tree
//     (a submodule's .git, an embedded repository) and every directory git
//     would take for a bare repository;
//   - every protected path (gitgate.Protected: .vscode, .envrc, .claude, ...),
//     the hooks directory of core.hooksPath inside the work tree, and every
//     workspace.readonly path is read-only, whether or not it exists: a
//     missing one is covered by an empty read-only placeholder, whose mount
//     point Docker makes in the project and agentbox removes afterwards;
//   - every file or directory that matches workspace.hidden is masked;
//   - every directory above one of these mounts is bound onto itself,
//     read-write (pinParents): a mount protects its mount point, not its
//     parent, and a mount point cannot be renamed;
//   - when the task ends, every git directory the agent made (a .git file or
//     directory, or a directory with HEAD beside objects and refs or a
//     commondir), told from the user's by identity, is disarmed before
//     agentbox's or the user's git looks at the work tree, and every link it
//     made out of the project is removed (disarm.go).
//
// What it cannot do: disarm such a directory while the task still runs.
package direct

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
)

// QuarantineSuffix is appended to the HEAD (or .git file) of a git
// directory the agent made in a direct task's work tree.
const QuarantineSuffix = ".agentbox-quarantine"

// maxDirectMounts bounds the mounts of a direct task: each existing git
// directory and each hidden match is one.
const maxDirectMounts = 500

// State is what a direct task remembers between its start and its
// collection (direct.json in its directory).
type State struct {
	// GitDirs are the git directories the work tree held at the start,
	// with their identity: they are the user's, not the agent's, wherever
	// the agent moved them.
	GitDirs []pathID `json:"git_dirs"`
	// Links are the identities of the symbolic links the work tree held
	// at the start.
	Links []fileID `json:"links"`
	// Placeholders are the mount points Docker made in the project for
	// paths that did not exist: removed after the task when still empty.
	Placeholders []string `json:"placeholders"`
}

// fileID is a file's identity: its device and inode.
type fileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// pathID is a path of the work tree and the identity of what it named.
type pathID struct {
	Path string `json:"path"`
	fileID
}

// Plan is a direct task's mounts and what its collection needs.
type Plan struct {
	// Binds are the task's mounts: the project at the workspace first,
	// then its .git.
	Binds []generator.Bind
	State State
}

// Write makes the placeholders' sources and direct.json in the task's
// directory.
func (d *Plan) Write(taskDir string) error {
	if err := os.Mkdir(filepath.Join(taskDir, "empty"), 0o555); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(taskDir, "empty-file"), nil, 0o444); err != nil {
		return err
	}
	data, err := json.Marshal(d.State)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(taskDir, "direct.json"), data, 0o600)
}

// ReadState reads the State that Write left in the task's directory.
func ReadState(taskDir string) (*State, error) {
	var st State
	data, err := os.ReadFile(filepath.Join(taskDir, "direct.json"))
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// NewPlan checks that the project can be worked on directly and plans
// the task's binds, whose placeholders will be in taskDir. It writes
// nothing.
func NewPlan(cfg *config.Config, project, taskDir string) (*Plan, error) {
	top, err := RealDir(project)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(filepath.Join(top, ".git")); err != nil || !fi.IsDir() {
		return nil, errors.New("--workspace direct needs the project directory to be the top of a git repository whose .git is a directory")
	}
	if err := agentCanWrite(top, cfg.UID, cfg.GID); err != nil {
		return nil, fmt.Errorf("--workspace direct: %w", err)
	}
	scan, err := scanWorkTree(top, cfg.Hidden)
	if err != nil {
		return nil, err
	}
	empty := filepath.Join(taskDir, "empty")
	emptyFile := filepath.Join(taskDir, "empty-file")
	ws := cfg.Workspace
	binds := []generator.Bind{{Source: top, Target: ws}, {Source: filepath.Join(top, ".git"), Target: ws + "/.git", ReadOnly: true},
		// As for the clone: remote URLs with tokens and the like stay on
		// the host.
		{Source: filepath.Join(top, filepath.FromSlash(generator.GitConfigMask)), Target: ws + "/.git/config", ReadOnly: true}}
	st := State{GitDirs: scan.gitDirs, Links: scan.links}
	for _, d := range scan.gitDirs {
		binds = append(binds, generator.Bind{Source: filepath.Join(top, filepath.FromSlash(d.Path)), Target: path.Join(ws, d.Path), ReadOnly: true})
	}
	guards, placeholders, err := guardBinds(cfg, top, scan, empty, emptyFile)
	if err != nil {
		return nil, err
	}
	binds, st.Placeholders = append(binds, guards...), placeholders
	for _, h := range scan.masked {
		src := emptyFile
		if h.dir {
			src = empty
		}
		binds = append(binds, generator.Bind{Source: src, Target: path.Join(ws, h.path), ReadOnly: true})
	}
	binds = pinParents(top, ws, binds)
	if len(binds) > maxDirectMounts {
		return nil, fmt.Errorf("--workspace direct would need %d mounts (git directories, hidden files and the directories above them in the work tree); at most %d", len(binds), maxDirectMounts)
	}
	return &Plan{binds, st}, nil
}

// guardBinds are the read-only binds of the protected paths (and of the
// hooks directory core.hooksPath names in the work tree), but those that
// workspace.hidden masks; placeholders are those Docker will make.
func guardBinds(cfg *config.Config, top string, scan *treeScan, empty, emptyFile string) (binds []generator.Bind, placeholders []string, err error) {
	guards, err := guardedPaths(cfg)
	if err != nil {
		return nil, nil, err
	}
	hooks, err := hooksPathIn(top)
	if err != nil {
		return nil, nil, err
	}
	if hooks != "" {
		guards = append(guards, guarded{hooks, false})
	}
	masked := map[string]bool{}
	for _, h := range scan.masked {
		masked[h.path] = true
	}
	for _, g := range guards {
		if masked[g.path] {
			continue // masked read-only below (a protected .env that workspace.hidden hides)
		}
		b, made, err := guardBind(top, cfg.Workspace, g.path, g.file, empty, emptyFile)
		if err != nil {
			return nil, nil, err
		}
		binds = append(binds, b)
		if made {
			placeholders = append(placeholders, g.path)
		}
	}
	return binds, placeholders, nil
}

// pinParents binds every directory above a read-only mount onto itself,
// read-write: a mount point cannot be renamed, so the agent cannot move a
// read-only path (or a git directory, or a masked file) away with its
// parent and put its own in its place.
func pinParents(top, ws string, binds []generator.Bind) []generator.Bind {
	have := map[string]bool{}
	for _, b := range binds {
		have[b.Target] = true
	}
	var pins []generator.Bind
	for _, b := range binds {
		rel, ok := strings.CutPrefix(b.Target, ws+"/")
		if !b.ReadOnly || !ok {
			continue
		}
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if t := path.Join(ws, d); !have[t] {
				have[t] = true
				pins = append(pins, generator.Bind{Source: filepath.Join(top, filepath.FromSlash(d)), Target: t})
			}
		}
	}
	slices.SortFunc(pins, func(a, b generator.Bind) int { return strings.Compare(a.Target, b.Target) })
	return append(binds, pins...)
}

// guarded is one path a direct task may not write.
type guarded struct {
	path string // relative, slash-separated
	file bool   // a placeholder for it is a file, not a directory
}

// guardedPaths are the protected entries (but workspace.writable opt-outs
// of a whole entry) and the workspace.readonly paths.
func guardedPaths(cfg *config.Config) ([]guarded, error) {
	var out []guarded
	for _, e := range gitgate.Protected {
		if slices.Contains(cfg.Writable, e.Path) {
			continue
		}
		for _, w := range cfg.Writable {
			if strings.HasPrefix(w, e.Path+"/") {
				return nil, fmt.Errorf("--workspace direct cannot make %s writable inside the read-only %s (workspace.writable); make all of %s writable or use the clone", w, e.Path, e.Path)
			}
		}
		out = append(out, guarded{e.Path, e.File})
	}
	for _, r := range cfg.ReadOnly {
		out = append(out, guarded{path.Clean(r), false})
	}
	return out, nil
}

// hooksPathIn is the directory the project's core.hooksPath names, relative
// to top, when it lies inside the work tree: git on the host runs the
// programs there, so the agent may not write it.
func hooksPathIn(top string) (string, error) {
	out, err := exec.Command("git", "-C", top, "config", "--get", "core.hooksPath").Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 { // unset
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("--workspace direct: reading core.hooksPath: %w", err)
	}
	p := strings.TrimSpace(string(out))
	if !filepath.IsAbs(p) {
		p = filepath.Join(top, p)
	}
	rel, err := filepath.Rel(top, filepath.Clean(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

// guardBind mounts rel read-only: itself when it exists, else a placeholder
// (made reports that). No component of rel may be a symlink: the agent could
// swap a link for a directory of its own, which the mount would not cover.
func guardBind(top, ws, rel string, file bool, empty, emptyFile string) (b generator.Bind, made bool, err error) {
	comps := strings.Split(rel, "/")
	for i := range comps {
		p := filepath.Join(top, filepath.Join(comps[:i+1]...))
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			src := empty
			if file && i == len(comps)-1 {
				src = emptyFile
			}
			if i < len(comps)-1 {
				// A missing parent: guard the first missing component.
				return generator.Bind{Source: empty, Target: path.Join(ws, path.Join(comps[:i+1]...)), ReadOnly: true}, true, nil
			}
			return generator.Bind{Source: src, Target: path.Join(ws, rel), ReadOnly: true}, true, nil
		}
		if err != nil {
			return b, false, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return b, false, fmt.Errorf("--workspace direct cannot guard %s: %s is a symlink, which the agent could replace; use the clone", rel, filepath.Join(comps[:i+1]...))
		}
	}
	return generator.Bind{Source: filepath.Join(top, rel), Target: path.Join(ws, rel), ReadOnly: true}, false, nil
}

// hiddenMatch is a path of the work tree that workspace.hidden masks.
type hiddenMatch struct {
	path string
	dir  bool
}

// hiddenMatcher matches a relative path against workspace.hidden as the
// workspace's entrypoint does: a pattern without / matches the last
// component, one with / the whole path; * and ? match any characters; the
// last matching pattern decides and !pattern takes a path back out.
func hiddenMatcher(patterns []string) func(rel string) bool {
	type pat struct {
		re      *regexp.Regexp
		neg     bool
		hasPath bool
	}
	var ps []pat
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		g := strings.TrimPrefix(p, "!")
		var re strings.Builder
		re.WriteString("^")
		for _, r := range g {
			switch r {
			case '*':
				re.WriteString(".*")
			case '?':
				re.WriteString(".")
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString("$")
		ps = append(ps, pat{regexp.MustCompile(re.String()), neg, strings.Contains(g, "/")})
	}
	return func(rel string) bool {
		hit := false
		for _, p := range ps {
			name := rel
			if !p.hasPath {
				name = path.Base(rel)
			}
			if p.re.MatchString(name) {
				hit = !p.neg
			}
		}
		return hit
	}
}

// RemovePlaceholders removes the placeholders' mount points in the work
// tree top that are still empty, deepest first.
func (st *State) RemovePlaceholders(top string) {
	for _, ph := range slices.Backward(st.Placeholders) {
		_ = removeIfEmpty(filepath.Join(top, filepath.FromSlash(ph)))
	}
}

// removeIfEmpty removes a placeholder's mount point: an empty directory or
// an empty regular file.
func removeIfEmpty(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() && fi.Size() == 0 || fi.IsDir() {
		return os.Remove(p) // fails on a directory that is not empty
	}
	return nil
}

// RealDir is dir absolute, with symlinks resolved.
func RealDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}
