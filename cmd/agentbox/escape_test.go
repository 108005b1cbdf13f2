package main

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
)

// Hostile text as the agent can write it: OSC 52 (writes the user's
// clipboard), CSI, the C1 CSI as a raw byte and in UTF-8, a bidirectional
// override.
const (
	osc52   = "\x1b]52;c;aGk=\a"
	rawCSI  = "\x9b2J"
	utf8CSI = "\u009b2J"
	bidi    = "\u202egnp.exe"
)

// terminalSafe fails when out holds anything a terminal would act on: it
// must be valid UTF-8 whose runes are all printable, newlines and tabs
// apart.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s is not valid UTF-8 (a raw C1 byte passes to the terminal):\n%q", what, out)
		return
	}
	for _, r := range out {
		if r != '\n' && r != '\t' && !unicode.IsPrint(r) {
			t.Errorf("%s holds %U raw:\n%q", what, r, out)
			return
		}
	}
}

// jsonSafe fails when the JSON text out holds a C1, bidirectional or other
// unprintable rune raw (encoding/json escapes only those below U+0020).
func jsonSafe(t *testing.T, what, out string) {
	t.Helper()
	if !json.Valid([]byte(out)) {
		t.Errorf("%s is not JSON:\n%s", what, out)
	}
	terminalSafe(t, what, out)
}

// TestFetchEscapesAgentText: branch names and paths of the agent's bundle
// reach fetch's table and --json escaped. (The gate refuses the branches
// whose names are not printable: git on the host would print them raw.)
func TestFetchEscapesAgentText(t *testing.T) {
	gitHome(t)
	host := filepath.Join(t.TempDir(), "host")
	git(t, ".", "init", "-q", host)
	commitAll(t, host, map[string]string{"README.md": "hi\n"})
	names := []string{"raw-" + rawCSI, "utf8-" + utf8CSI, "bidi-" + bidi}
	_, bundle := agentRepo(t, host, map[string]map[string]string{
		names[0]: {"a": "a\n"},
		names[1]: {"b": "b\n"},
		names[2]: {"c": "c\n"},
		"paths":  {".vscode/" + osc52 + rawCSI: "x\n"},
	})
	d := fakeBundle(t, bundle, &config.Config{Workspace: "/workspace"}, nil)

	stdout, stderr, code := runInDeps(t, d, host, "fetch")
	if code != exitError {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	terminalSafe(t, "fetch's table", stdout)
	terminalSafe(t, "fetch's stderr", stderr)
	for _, want := range []string{`raw-\x9b2J`, `utf8-\u{9b}2J`, `bidi-\u{202e}gnp.exe`, `.vscode/\x1b]52;c;aGk=\x07\x9b2J: protected path .vscode`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("fetch's table lacks %s:\n%s", want, stdout)
		}
	}

	stdout, _, _ = runInDeps(t, d, host, "fetch", "--json")
	jsonSafe(t, "fetch --json", stdout)
	var got struct{ Branches []struct{ Name string } }
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, b := range got.Branches {
		seen[b.Name] = true
	}
	// JSON holds the names themselves (invalid UTF-8 as U+FFFD).
	for _, n := range names {
		if n = strings.ToValidUTF8(n, "\ufffd"); !seen[n] {
			t.Errorf("fetch --json lacks branch %q: %s", n, stdout)
		}
	}
}

// TestFetchEscapesFsckError: git's fsck echoes a .gitmodules value in its
// error (it replaces ASCII controls, not C1 or bidi ones); the branch's
// reason passes it on escaped.
func TestFetchEscapesFsckError(t *testing.T) {
	gitHome(t)
	host := filepath.Join(t.TempDir(), "host")
	git(t, ".", "init", "-q", host)
	commitAll(t, host, map[string]string{"README.md": "hi\n"})
	_, bundle := agentRepo(t, host, map[string]map[string]string{
		"sub": {".gitmodules": "[submodule \"../" + rawCSI + utf8CSI + bidi + "\"]\n\tpath = x\n\turl = https://example.invalid/x\n"},
	})
	d := fakeBundle(t, bundle, &config.Config{Workspace: "/workspace"}, nil)
	stdout, stderr, code := runInDeps(t, d, host, "fetch")
	if code != exitError || !strings.Contains(stdout, "disallowed submodule name") {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	terminalSafe(t, "fetch's table", stdout)
	if want := `../\x9b2J\u{9b}2J\u{202e}gnp.exe`; !strings.Contains(stdout, want) {
		t.Errorf("the reason lacks %s: %q", want, stdout)
	}
}

// TestTaskSummaryEscapes: what a task's clone reports (its uncommitted
// files, git's complaints) reaches run's summary escaped, in text and JSON.
func TestTaskSummaryEscapes(t *testing.T) {
	p := &task.Prepared{Rec: &task.Record{Name: "t1", Branch: "agentbox/t1"}, Cfg: &config.Config{}}
	sum := task.NewSummary(p.Rec, false, false, new(int))
	script := `printf 'status ?? f\233[2J\n' >&2; printf 'status ?? g\302\2332J\342\200\256\n' >&2; ` +
		`printf 'fatal: \302\233bad \033]52;c;aGk=\007\n' >&2; exit 1`
	task.CollectFrom(t.Context(), p, sum, func(ctx context.Context, stdout, stderr io.Writer) error {
		cmd := exec.CommandContext(ctx, "sh", "-c", script)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		return cmd.Run()
	})
	if len(sum.Uncommitted) != 2 || !strings.HasPrefix(sum.BranchStatus, "not collected") {
		t.Fatalf("collected %q, status %q", sum.Uncommitted, sum.BranchStatus)
	}
	var text, js bytes.Buffer
	printSummary(&text, sum)
	terminalSafe(t, "run's summary", text.String())
	for _, want := range []string{`f\x9b[2J`, `\u{9b}bad \x1b]52;c;aGk=\x07`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the summary lacks %s:\n%s", want, text.String())
		}
	}
	if err := reportTask(sum, true, &js, &text); err != nil {
		t.Fatal(err)
	}
	jsonSafe(t, "run --json", js.String())
}

// TestDirectSummaryEscapes: a direct task's file names (git status with
// core.quotePath false, as the agent may set it) and the git directories it
// made reach the summary escaped; so does a "not collected" status.
func TestDirectSummaryEscapes(t *testing.T) {
	gitHome(t)
	repo := filepath.Join(t.TempDir(), "repo")
	git(t, ".", "init", "-q", repo)
	commitAll(t, repo, map[string]string{"README.md": "hi\n"})
	git(t, repo, "config", "core.quotePath", "false")
	writeFile(t, filepath.Join(repo, "f"+rawCSI+bidi), []byte("x"))
	evil := filepath.Join(repo, "g"+osc52)
	for _, d := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(evil, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(evil, "HEAD"), []byte("ref: refs/heads/main\n"))
	taskDir := t.TempDir()
	writeFile(t, filepath.Join(taskDir, "direct.json"), []byte(`{"git_dirs":[]}`))
	p := &task.Prepared{Rec: &task.Record{Name: "t1", Dir: repo, Workspace: task.WorkspaceDirect}, Cfg: &config.Config{}, Dir: taskDir}
	sum := task.NewSummary(p.Rec, false, false, new(int))
	// No container seen: the collect stops nothing and runs no docker.
	(&task.Compose{P: p}).Collect(context.Background(), sum, false)
	if len(sum.Quarantined) != 1 || len(sum.Uncommitted) == 0 {
		t.Fatalf("quarantined %q, uncommitted %q, status %q", sum.Quarantined, sum.Uncommitted, sum.BranchStatus)
	}
	var text bytes.Buffer
	printSummary(&text, sum)
	terminalSafe(t, "a direct task's summary", text.String())
	if want := `disarmed g\x1b]52;c;aGk=\x07`; !strings.Contains(text.String(), want) {
		t.Errorf("the summary lacks %s:\n%s", want, text.String())
	}

	sum.BranchStatus = "not collected: disarming the git directory g" + osc52 + " the agent made: permission denied"
	text.Reset()
	printSummary(&text, sum)
	terminalSafe(t, "a direct task's summary, not collected", text.String())
}

// logsDocker puts a docker on PATH whose logs print hostile output on
// stdout and stderr, for the task containers of serviceState.
func logsDocker(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	script := `#!/bin/sh
case "$1:$2" in
  compose:version) echo 2.40.3; exit 0 ;;
  version:*) echo 28.2.2; exit 0 ;;
  ps:*) echo agent-id; exit 0 ;;
  inspect:*) echo "false 0 exited 2026-01-01T10:00:00Z"; exit 0 ;;
  logs:*) printf 'out \033]52;c;aGk=\007\tand \302\2332J\n' ; printf 'err \2332J \342\200\256x\\y\n' >&2; exit 0 ;;
  *) printf 'out \033]52;c;aGk=\007 compose\n'; exit 0 ;;
esac
`
	writeFile(t, filepath.Join(bin, "docker"), []byte(script))
	if err := os.Chmod(filepath.Join(bin, "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
}

// TestLogsEscapes: agentbox logs TASK escapes the agent's output line by
// line, and passes it through only with --raw; so do the sandbox's logs.
func TestLogsEscapes(t *testing.T) {
	dir := project(t, "agent-claude")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	logsDocker(t)
	cfg, err := sandbox.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	td, err := task.Dir(cfg.Name, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(td, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := &task.Record{Name: "t1", Project: generator.TaskProject(cfg.Name, "t1"), Dir: dir, Branch: "agentbox/t1", State: task.StateExited}
	if err := rec.Write(cfg.Name); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := runInDeps(t, testDeps(), dir, "logs", "t1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	terminalSafe(t, "logs' stdout", stdout)
	terminalSafe(t, "logs' stderr", stderr)
	if want := "out \\x1b]52;c;aGk=\\x07\tand \\u{9b}2J\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if want := "err \\x9b2J \\u{202e}x\\\\y\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}

	stdout, stderr, _ = runInDeps(t, testDeps(), dir, "logs", "--raw", "t1")
	if want := "out \x1b]52;c;aGk=\a\tand \u009b2J\n"; stdout != want {
		t.Errorf("--raw: stdout %q, want %q", stdout, want)
	}
	if want := "err \x9b2J \u202ex\\y\n"; stderr != want {
		t.Errorf("--raw: stderr %q, want %q", stderr, want)
	}

	stdout, _, _ = runInDeps(t, testDeps(), dir, "logs", "agent")
	terminalSafe(t, "logs agent", stdout)
	if !strings.Contains(stdout, `\x1b]52`) {
		t.Errorf("logs agent: %q", stdout)
	}
}

// TestJSONOutputThroughWriteJSON: every JSON that cmd/agentbox prints goes
// through writeJSON (termsafe.JSON's escapes); a json.Encoder writes to a
// stream, which here is output, so none is used besides it.
func TestJSONOutputThroughWriteJSON(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "json" && sel.Sel.Name == "NewEncoder" {
					t.Errorf("%s: json.NewEncoder: print JSON with writeJSON, which escapes C1 and bidi controls", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
}

// TestWriteJSON: writeJSON's output decodes to the same value and holds no
// C1, bidirectional or format rune raw.
func TestWriteJSON(t *testing.T) {
	in := map[string]string{"k" + bidi: rawCSI + utf8CSI + osc52 + "\u200b\ufeffé"}
	var b bytes.Buffer
	if err := writeJSON(&b, in); err != nil {
		t.Fatal(err)
	}
	jsonSafe(t, "writeJSON", b.String())
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for k, v := range in {
		if back[k] != strings.ToValidUTF8(v, "\ufffd") {
			t.Errorf("%q decodes to %q", v, back[k])
		}
	}
	if !strings.Contains(b.String(), `\u009b2J`) || !strings.HasSuffix(b.String(), "}\n") {
		t.Errorf("writeJSON: %s", b.String())
	}
}
