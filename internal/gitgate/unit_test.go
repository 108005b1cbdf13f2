package gitgate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPathReasons(t *testing.T) {
	r := newRules(Policy{ReadOnly: []string{"docs/adr"}, Writable: []string{".claude/commands"}}, []string{"tools/hooks"})
	for _, tt := range []struct {
		path string
		want string // "" when the change is accepted
	}{
		{"src/main.go", ""},
		{"docs/vscode.md", ""},
		{".vscodex/x", ""},
		{"sub/.vscode/tasks.json", "protected path .vscode"}, // VS Code opened on sub/ runs it
		{"a/b/.envrc", "protected path .envrc"},              // direnv in a/b runs it
		{"sub/.husky/pre-commit", ""},                        // hook managers read the top only
		{"sub/agentbox.yaml", ""},
		{".vscode", "protected path .vscode"},
		{".vscode/tasks.json", "protected path .vscode"},
		{".VSCode/tasks.json", "protected path .vscode"},
		{".vscode. /tasks.json", "protected path .vscode"},
		{".vscode::$INDEX_ALLOCATION/tasks.json", "protected path .vscode"},
		{".vs\u200dcode/tasks.json", "protected path .vscode"},
		{".vscode\\tasks.json", "protected path .vscode"},
		{"AGENTBOX.LOCK", "protected path agentbox.lock"},
		{".claude/settings.json", "protected path .claude"},
		{".claude/commands/review.md", ""},
		{".Claude/Commands/review.md", ""},
		{"docs/adr", "read-only path docs/adr"},
		{"docs/ADR/1.md", "read-only path docs/adr"},
		{"docs/adrs/1.md", ""},
		{"tools/hooks/pre-commit", "core.hooksPath"},
		{"vendor/.git/config", "git's own directory"},
		{"vendor/.GIT./config", "git's own directory"},
		{"vendor/git~1/config", "git's own directory"},
		{"vendor/.g\u200cit/config", "git's own directory"},
		{"vendor/.github/x", ""},
	} {
		got := strings.Join(r.pathReasons(tt.path), "; ")
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("pathReasons(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestSymlinkReasons(t *testing.T) {
	r := newRules(Policy{}, nil)
	for _, tt := range []struct {
		link, target, want string
	}{
		{"docs/l", "../README.md", ""},
		{"l", "docs/../README.md", "after a name"},
		{"a/b/l", "../../c", ""},
		{"a/b/l", "../../../c", "climbs out"},
		{"l", "..", "climbs out"},
		{"l", "/etc/passwd", "absolute"},
		{"l", "\\\\server\\share", "absolute"},
		{"l", "C:\\Windows", "absolute"},
		{"l", "", "target"},
		{"docs/l", "../.git/config", "git's own directory"},
		{"docs/l", "../.MCP.json", "protected path .mcp.json"},
		{"l", ".", ""},
	} {
		got := strings.Join(r.symlinkReasons(tt.link, tt.target), "; ")
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("symlinkReasons(%q, %q) = %q, want %q", tt.link, tt.target, got, tt.want)
		}
	}
}

// TestParseLogOddPaths: paths that hold the bytes the parser splits on
// (newlines, the header byte, a leading colon) come through whole.
func TestParseLogOddPaths(t *testing.T) {
	isolate(t)
	repo := newHost(t)
	names := []string{"\x01 x y", ":100644 100644", "\n:z", "tab\there", "sp ace", "\\back"}
	for _, n := range names {
		writeTestFile(t, filepath.Join(repo, n), "x\n")
	}
	if err := os.Symlink("README.md", filepath.Join(repo, "link")); err != nil {
		t.Fatal(err)
	}
	commitFiles(t, repo, nil, "odd")
	cmd := gitCmd(repo, logArgs...)
	cmd.Stdin = strings.NewReader("HEAD\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	commits, err := parseLog(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(commits) != 2 || len(commits[0].parents) != 1 || len(commits[1].parents) != 0 {
		t.Fatalf("%+v", commits)
	}
	var got []string
	for _, c := range commits[0].changes {
		got = append(got, c.path)
		if c.path == "link" && c.mode != modeSymlink {
			t.Errorf("link has mode %s", c.mode)
		}
	}
	want := append(slices.Clone(names), "link")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
	if len(commits[1].changes) != 2 { // the root commit: README.md, docs/guide.md
		t.Errorf("root commit changes %+v", commits[1].changes)
	}
	for _, bad := range []string{"garbage\x00", ":100644 100644 abc\x00x\x00", "\x01abc\x00:1 2 3 4 M\x00"} {
		if _, err := parseLog([]byte(bad)); err == nil {
			t.Errorf("parseLog(%q) accepted", bad)
		}
	}
}

// TestGitEnvironmentIgnored: GIT_* variables that name another repository
// (as in a git hook) do not redirect Fetch.
func TestGitEnvironmentIgnored(t *testing.T) {
	isolate(t)
	host := newHost(t)
	other := newHost(t)
	agent := newAgent(t, host)
	branch(t, agent, "work")
	commitFiles(t, agent, map[string]string{"a.txt": "a\n"}, "a")
	bundle := bundleOf(t, agent)
	for k, v := range map[string]string{
		"GIT_DIR": filepath.Join(other, ".git"), "GIT_WORK_TREE": other, "GIT_INDEX_FILE": filepath.Join(other, "index"),
		"GIT_NAMESPACE": "elsewhere", "GIT_CONFIG_PARAMETERS": "'fetch.fsckobjects'='false'",
	} {
		t.Setenv(k, v)
	}
	res, err := Fetch(t.Context(), FetchOptions{Dir: host, Bundle: bundle})
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_NAMESPACE", "GIT_CONFIG_PARAMETERS"} {
		os.Unsetenv(k)
	}
	if err != nil {
		t.Fatal(err)
	}
	wantWritten(t, host, byName(t, res, "work"), StatusNew)
	if refs := gitT(t, other, "for-each-ref"); strings.Contains(refs, "agentbox") {
		t.Errorf("refs written into the other repository:\n%s", refs)
	}
}

func TestGitEnv(t *testing.T) {
	t.Setenv("GIT_DIR", "/x")
	t.Setenv("GIT_CONFIG_GLOBAL", "/g")
	t.Setenv("GIT_TRACE2_EVENT", "/t")
	env := strings.Join(gitEnv(), "\n")
	if strings.Contains(env, "GIT_DIR=") || !strings.Contains(env, "GIT_CONFIG_GLOBAL=/g") || !strings.Contains(env, "GIT_TRACE2_EVENT=/t") {
		t.Errorf("gitEnv() = %s", env)
	}
}

// TestREADMEListsProtected keeps docs/workspace.md's table of protected paths in
// step with Protected: the first column names every entry, and only those.
func TestREADMEListsProtected(t *testing.T) {
	data, err := os.ReadFile("../../docs/workspace.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(data), "**Protected paths.**")
	section, _, _ = strings.Cut(section, "**Other refusals.**")
	var listed []string
	for _, l := range strings.Split(section, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(l[1:], "|")
		for _, p := range strings.Split(cell, ",") {
			listed = append(listed, strings.Trim(p, " `"))
		}
	}
	var want []string
	for _, e := range Protected {
		want = append(want, e.Path)
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("docs/workspace.md lists %q\nProtected holds     %q", listed, want)
	}
}

// TestParseTreeModes: a tree entry is read by its mode's type bits, so a
// zero-padded mode (fsck only warns) still names a tree.
func TestParseTreeModes(t *testing.T) {
	id := strings.Repeat("\x01", 20)
	data := []byte("40000 a\x00" + id + "040000 b\x00" + id + "120000 l\x00" + id + "100644 f\x00" + id)
	entries, err := parseTree(string(data), 20)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, e := range entries {
		got = append(got, e.typ)
	}
	if want := []uint64{typeTree, typeTree, typeSymlink, 0o100000}; !slices.Equal(got, want) {
		t.Errorf("types %o, want %o", got, want)
	}
	if _, err := parseTree("100644 f\x00short", 20); err == nil {
		t.Error("a truncated tree was accepted")
	}
}

// TestResolvePath: the walk through a tree's links as the kernel does it.
func TestResolvePath(t *testing.T) {
	links := map[string]string{
		".vscode": "editor/vscode", "editor": "ed", "loop": "loop", "up": "..", "sub/up": "..",
		"abs": "/home/u/proj/tools", "out": "/etc", "Case": "x", "broken": "",
	}
	look := func(p string) (string, bool) {
		t, ok := links[p]
		if !ok {
			t, ok = links[strings.ToUpper(p[:1])+p[1:]]
		}
		return t, ok
	}
	tops := []string{"/home/u/proj"}
	for _, tt := range []struct {
		path, loc string
		ok        bool
		passed    string
	}{
		{".vscode/tasks.json", "ed/vscode/tasks.json", true, ".vscode editor ed ed/vscode ed/vscode/tasks.json"},
		{"sub/up/.envrc", ".envrc", true, "sub sub/up .envrc"},
		{"up/x", "", false, "up"},
		{"loop/x", "", false, strings.TrimSpace(strings.Repeat("loop ", 41))},
		{"abs/env.sh", "tools/env.sh", true, "abs tools tools/env.sh"},
		{"out/passwd", "", false, "out"},
		{"case/y", "x/y", true, "case x x/y"},
		{"broken/y", "", false, "broken"},
		{"a/../b", "b", true, "a b"},
	} {
		loc, passed, ok := resolvePath(look, tops, split(tt.path))
		if ok != tt.ok || strings.Join(loc, "/") != tt.loc || strings.Join(passed, " ") != tt.passed {
			t.Errorf("resolvePath(%q) = %q %q %v, want %q %q %v", tt.path, strings.Join(loc, "/"), strings.Join(passed, " "), ok, tt.loc, tt.passed, tt.ok)
		}
	}
}
