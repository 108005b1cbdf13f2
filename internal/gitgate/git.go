package gitgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// keptGitEnv are the GIT_* variables passed on to git: where the user keeps
// their configuration and tracing. Every other GIT_* variable (GIT_DIR,
// GIT_WORK_TREE, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY, GIT_CONFIG_PARAMETERS,
// GIT_NAMESPACE, ...) could point us at another repository or change what a
// command does, as it does when agentbox runs from inside a git hook.
var keptGitEnv = []string{"GIT_CONFIG_GLOBAL=", "GIT_CONFIG_SYSTEM=", "GIT_CONFIG_NOSYSTEM=", "GIT_EXEC_PATH=", "GIT_TRACE"}

// gitEnv is the environment of every git command: ours without the GIT_*
// variables that could redirect it.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") && !keptEnv(kv) {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func keptEnv(kv string) bool {
	for _, k := range keptGitEnv {
		if strings.HasPrefix(kv, k) {
			return true
		}
	}
	return false
}

// gitRunner runs git in one directory.
type gitRunner struct {
	dir string
	env []string
}

func newGit(dir string) gitRunner { return gitRunner{dir: dir, env: gitEnv()} }

// with returns g with the variables kv added to its environment.
func (g gitRunner) with(kv ...string) gitRunner {
	g.env = append(append([]string{}, g.env...), kv...)
	return g
}

// run runs `git -C DIR ARGS...` with stdin and returns its stdout. A failure
// is an error naming the subcommand and git's first line on stderr.
func (g gitRunner) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	var out bytes.Buffer
	if err := g.stream(ctx, stdin, &out, args...); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// stream is run writing stdout to w.
func (g gitRunner) stream(ctx context.Context, stdin io.Reader, w io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-replace-objects", "-C", g.dir}, args...)...)
	cmd.Env = g.env
	cmd.Stdin = stdin
	cmd.Stdout = w
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return &gitError{args: args, stderr: errb.String(), err: err}
	}
	return nil
}

// gitError is a failed git command.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	line := errorLine(e.stderr)
	if line == "" {
		line = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", subcommand(e.args), line)
}

// subcommand is the first argument that is neither an option nor the value
// of -c.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-c":
			i++
		case !strings.HasPrefix(args[i], "-"):
			return args[i]
		}
	}
	return strings.Join(args, " ")
}

func (e *gitError) Unwrap() error { return e.err }

// stderrLine is git's first error line on stderr, or the error itself.
func stderrLine(err error) string {
	var ge *gitError
	if errors.As(err, &ge) {
		if l := errorLine(ge.stderr); l != "" {
			return l
		}
	}
	return err.Error()
}

// errorLine is the first line of git's stderr that says "error:" or
// "fatal:" (warnings come first when fsck finds several things), or else
// its first line.
func errorLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "error: ") || strings.HasPrefix(l, "fatal: ") {
			return strings.TrimSpace(l)
		}
	}
	return firstLine(stderr)
}

// firstLine is the first line of s that is not blank.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
