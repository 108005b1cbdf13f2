// Package gitgate brings an agent's commits from its own git clone into the
// host repository without trusting anything in that clone. The clone travels
// as a git bundle (pure data); the host's git fetches it with fsck on, and
// every new commit is examined before a branch is written: changes to paths
// whose content host tools run or offer to run (Protected), gitlinks,
// symlinks that leave the repository and `.git` path components refuse the
// branch. Nothing from the agent's repository (config, hooks, attributes) is
// ever read or run. The package never prints.
package gitgate

import (
	"fmt"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/validate"
)

// Protected lists the project paths (relative to the top of the repository)
// whose content a tool on the host runs, or offers to run, by itself: an
// agent's change to one of them must never reach the host unless the user
// opts out for that path (workspace.writable). A path matches an entry when
// it is the entry or lies below it, compared as a case-insensitive
// filesystem (macOS, Windows) would, with NTFS's trailing dots and spaces and
// HFS+'s ignored code points dropped (see fold).
var Protected = []struct{ Path, Why string }{
	{".agentbox", "the sandbox's own definition: Dockerfiles, compose file and firewall program the host builds and runs"},
	{"agentbox.yaml", "the sandbox's own definition: agentbox generate compiles it into what the host builds and runs"},
	{"agentbox.lock", "the sandbox's own definition: the image digests and agent versions the host builds"},
	{".devcontainer", "the Dev Container definition: VS Code and the devcontainer CLI build and start it on the host"},
	{".gitmodules", "submodule URLs and paths: git clones and checks them out on the host (and URLs can name commands)"},
	{".vscode", "VS Code runs tasks.json tasks on folder open (runOn: folderOpen) and reads settings that name programs"},
	{".idea", "JetBrains IDEs run the run configurations and startup tasks it defines"},
	{".claude", "Claude Code on the host runs the hooks of settings.json and settings.local.json"},
	{".mcp.json", "MCP servers are programs: Claude Code and other clients start the ones listed here"},
	{".codex", "Codex on the host reads config.toml, whose MCP servers are programs it starts"},
	{".gemini", "Gemini CLI on the host reads settings.json, whose MCP servers are programs it starts"},
	{".cursor", "Cursor starts the MCP servers of mcp.json"},
	{".opencode", "OpenCode on the host loads its plugins (code) and the MCP servers (programs) of its config"},
	{"opencode.json", "OpenCode on the host starts the local MCP servers (programs) it lists"},
	{"opencode.jsonc", "OpenCode on the host starts the local MCP servers (programs) it lists"},
	{".envrc", "direnv runs it in your shell when you enter the directory"},
	{".pre-commit-config.yaml", "pre-commit runs the hooks it names at every commit on the host"},
	{".husky", "husky's git hooks: git runs them at every commit on the host"},
}

// Policy is what the user changed of the default rules.
type Policy struct {
	// Writable are paths at or below Protected entries whose changes are
	// accepted anyway (workspace.writable).
	Writable []string
	// ReadOnly are further paths whose changes are refused
	// (workspace.readonly).
	ReadOnly []string
}

// Validate checks that every path is a clean relative path and that every
// Writable path lies at or below a Protected entry.
func (p Policy) Validate() error {
	for i, w := range p.Writable {
		if err := CheckWritable(w); err != nil {
			return fmt.Errorf("workspace.writable[%d]: %w", i, err)
		}
	}
	for i, r := range p.ReadOnly {
		if err := validate.RelPath(r); err != nil {
			return fmt.Errorf("workspace.readonly[%d]: %w", i, err)
		}
	}
	return nil
}

// CheckWritable checks one entry of workspace.writable: a clean relative
// path at or below a Protected entry.
func CheckWritable(w string) error {
	if err := validate.RelPath(w); err != nil {
		return err
	}
	if _, ok := protectedEntry(split(w)); !ok {
		return fmt.Errorf("%q is not a protected path; the protected paths are %s", w, protectedNames())
	}
	return nil
}

func protectedNames() string {
	names := make([]string, len(Protected))
	for i, e := range Protected {
		names[i] = e.Path
	}
	return strings.Join(names, ", ")
}

// protectedEntry returns the index of the Protected entry that path (split
// into components) is at or below.
func protectedEntry(path []string) (int, bool) {
	for i, e := range Protected {
		if under(path, split(e.Path)) {
			return i, true
		}
	}
	return 0, false
}

// split cuts a repository path into components; a backslash separates
// components too, as it does on Windows.
func split(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' })
}

// under reports whether path is entry or lies below it, component by
// component under fold.
func under(path, entry []string) bool {
	if len(path) < len(entry) {
		return false
	}
	for i := range entry {
		if !strings.EqualFold(fold(path[i]), fold(entry[i])) {
			return false
		}
	}
	return true
}

// fold maps a path component to the name a Windows or macOS filesystem
// would open: NTFS ignores an alternate data stream suffix (":stream") and
// trailing dots and spaces; HFS+ ignores some zero-width code points. Case is
// left to strings.EqualFold (Unicode simple folding).
func fold(c string) string {
	if i := strings.IndexByte(c, ':'); i >= 0 {
		c = c[:i]
	}
	if strings.ContainsFunc(c, hfsIgnored) {
		c = strings.Map(func(r rune) rune {
			if hfsIgnored(r) {
				return -1
			}
			return r
		}, c)
	}
	return strings.TrimRight(c, ". ")
}

// hfsIgnored are the code points HFS+ drops from names (git's
// utf8.c:next_hfs_char).
func hfsIgnored(r rune) bool {
	return (r >= 0x200c && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) ||
		(r >= 0x206a && r <= 0x206f) || r == 0xfeff
}

// isDotGit reports whether a path component names git's own directory on
// some filesystem: ".git" folded, or its NTFS short name "git~1".
func isDotGit(c string) bool {
	f := fold(c)
	return strings.EqualFold(f, ".git") || strings.EqualFold(f, "git~1")
}
