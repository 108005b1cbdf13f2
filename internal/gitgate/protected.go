// Package gitgate brings an agent's commits from its own git clone into the
// host repository without trusting anything in that clone. The clone travels
// as a git bundle (pure data); the host's git fetches it with fsck on into a
// quarantine object directory, and every branch is examined there before it
// is written or any of its objects enters the host's store: a name git
// cannot store, an object fsck refuses, a branch over the Limits, changes to
// paths whose content host tools run or offer to run (Protected), gitlinks,
// symlinks that leave the repository and `.git` path components refuse the
// branch, and that branch only. Nothing from the agent's repository (config,
// hooks, attributes) is ever read or run. The package never prints.
package gitgate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/validate"
)

// Protected lists the project paths (relative to the top of the repository)
// whose content a tool on the host runs, or offers to run, by itself: an
// agent's change to one of them must never reach the host unless the user
// opts out for that path (workspace.writable). A path matches an entry when
// it is the entry or lies below it, compared as a case-insensitive
// filesystem (macOS, Windows) would, with NTFS's trailing dots and spaces and
// HFS+'s ignored code points dropped (see fold); a Nested entry matches at
// any depth too. File marks the entries a tool reads as a file (the others
// are directories). A tool that reads
// several names is listed with every name it reads: an agent could add the
// one the project does not use yet.
var Protected = slices.Concat([]ProtectedPath{
	{".agentbox", "the sandbox's own definition: Dockerfiles, compose file and firewall program the host builds and runs", false, false},
	{"agentbox.yaml", "the sandbox's own definition: agentbox generate compiles it into what the host builds and runs", true, false},
	{"agentbox.lock", "the sandbox's own definition: the image digests and agent versions the host builds", true, false},
	{".devcontainer", "the Dev Container definition: VS Code and the devcontainer CLI build and start it on the host", false, true},
	{".devcontainer.json", "the Dev Container definition (the spec's top-level name): VS Code and the devcontainer CLI run its initializeCommand on the host", true, true},
	{".gitmodules", "submodule URLs and paths: git clones and checks them out on the host (and URLs can name commands)", true, false},
	{".vscode", "VS Code runs tasks.json tasks on folder open (runOn: folderOpen) and reads settings that name programs", false, true},
	{".idea", "JetBrains IDEs run the run configurations and startup tasks it defines", false, true},
	{".zed", "Zed starts the language servers and formatters its settings.json names", false, true},
	{".dir-locals.el", "Emacs evaluates its eval: forms when you open a file below it (asking first)", true, true},
	{".dir-locals-2.el", "Emacs evaluates its eval: forms when you open a file below it (asking first)", true, true},
	{".exrc", "Vim and Neovim with 'exrc' set source it on start (Neovim asks first)", true, true},
	{".vimrc", "Vim with 'exrc' set sources it on start", true, true},
	{".nvimrc", "Neovim with 'exrc' set sources it on start (asking first)", true, true},
	{".nvim.lua", "Neovim with 'exrc' set runs it on start (asking first)", true, true},
	{".lazy.lua", "lazy.nvim loads it as a plugin spec (Lua code) when Neovim starts here (asking first)", true, true},
	{".claude", "Claude Code on the host runs the hooks of settings.json and settings.local.json", false, true},
	{".mcp.json", "MCP servers are programs: Claude Code and other clients start the ones listed here", true, true},
	{".codex", "Codex on the host reads config.toml, whose MCP servers are programs it starts", false, true},
	{".gemini", "Gemini CLI on the host reads settings.json, whose MCP servers are programs it starts", false, true},
	{".qwen", "Qwen Code on the host reads settings.json, whose MCP servers are programs it starts", false, true},
	{".cursor", "Cursor starts the MCP servers of mcp.json and runs the hooks of hooks.json", false, true},
	{".opencode", "OpenCode on the host loads its plugins (code) and the MCP servers (programs) of its config", false, true},
	{"opencode.json", "OpenCode on the host starts the local MCP servers (programs) it lists", true, true},
	{"opencode.jsonc", "OpenCode on the host starts the local MCP servers (programs) it lists", true, true},
	{".continue", "Continue starts the MCP servers (programs) its config and mcpServers/ list", false, true},
	{".roo", "Roo Code starts the MCP servers (programs) of mcp.json", false, true},
	{".kilocode", "Kilo Code starts the MCP servers (programs) of mcp.json", false, true},
	{".amazonq", "Amazon Q starts the MCP servers (programs) of mcp.json", false, true},
	{".junie", "Junie starts the MCP servers (programs) of mcp/mcp.json", false, true},
	{"crush.json", "Crush starts the MCP servers and language servers (programs) it lists", true, true},
	{".crush.json", "Crush starts the MCP servers and language servers (programs) it lists", true, true},
	{".aider.conf.yml", "aider runs its lint-cmd and test-cmd after its edits", true, true},
	{".envrc", "direnv runs it in your shell when you enter the directory", true, true},
	{".env", "autoenv runs it as a shell script when you enter the directory (asking first); direnv (load_dotenv) and mise load it into your shell's environment, where PATH, BASH_ENV and the like name programs", true, true},
	{".env.leave", "autoenv runs it as a shell script when you leave the directory (asking first)", true, true},
	{".autoenv.zsh", "zsh-autoenv sources it when you enter the directory (asking first)", true, true},
	{".autoenv_leave.zsh", "zsh-autoenv sources it when you leave the directory (asking first)", true, true},
	{"mise.toml", "mise runs its [hooks] when you enter the directory and loads its [env] into your shell (once trusted)", true, true},
	{".mise.toml", "mise runs its [hooks] when you enter the directory and loads its [env] into your shell (once trusted)", true, true},
	{"mise.local.toml", "mise runs its [hooks] when you enter the directory and loads its [env] into your shell (once trusted)", true, true},
	{".mise.local.toml", "mise runs its [hooks] when you enter the directory and loads its [env] into your shell (once trusted)", true, true},
	{".mise", "mise reads .mise/config.toml: [hooks] it runs when you enter the directory, [env] it loads (once trusted)", false, true},
	{".pre-commit-config.yaml", "pre-commit runs the hooks it names at every commit on the host", true, false},
	{".husky", "husky's git hooks: git runs them at every commit on the host", false, false},
	{".lefthook", "lefthook runs the scripts below it (source_dir) from its git hooks", false, false},
	{".lefthook-local", "lefthook runs the scripts below it (source_dir_local) from its git hooks", false, false},
	{".overcommit.yml", "overcommit runs the hooks it configures at every commit on the host", true, false},
},
	files("husky 4 runs the hook commands it names at every commit on the host",
		".huskyrc", ".huskyrc.json", ".huskyrc.yaml", ".huskyrc.yml", ".huskyrc.js", "husky.config.js"),
	files("lefthook runs the commands it names at every commit on the host (its git hooks call it)", lefthookConfigs()...))

// ProtectedPath is one entry of Protected.
type ProtectedPath struct {
	Path, Why string
	File      bool // a file; otherwise a directory
	// Nested: the tool reads the name in whichever directory you open or
	// enter (direnv, Emacs, Vim, mise, editors and agents started in a
	// subdirectory), so it is protected at any depth; otherwise only at
	// the top (git hook managers, submodules, agentbox itself).
	Nested bool
}

func files(why string, paths ...string) []ProtectedPath {
	out := make([]ProtectedPath, len(paths))
	for i, p := range paths {
		out[i] = ProtectedPath{p, why, true, false}
	}
	return out
}

// lefthookConfigs are the names lefthook reads its configuration from:
// lefthook and lefthook-local, with or without a leading dot, in each of its
// formats.
func lefthookConfigs() []string {
	var names []string
	for _, dot := range []string{"", "."} {
		for _, local := range []string{"", "-local"} {
			for _, ext := range []string{"yml", "yaml", "toml", "json", "jsonc"} {
				names = append(names, dot+"lefthook"+local+"."+ext)
			}
		}
	}
	return names
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
// into components) is at or below, or, for a Nested entry, has a part at or
// below.
func protectedEntry(path []string) (int, bool) {
	for i, e := range Protected {
		entry := split(e.Path)
		if under(path, entry) {
			return i, true
		}
		if e.Nested {
			for j := 1; j < len(path); j++ {
				if under(path[j:], entry) {
					return i, true
				}
			}
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
