package netlab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox-dev/agentbox/internal/shquote"
)

// File is the content and mode of a file a Spec lays over the machine's.
type File struct {
	Data []byte
	Mode fs.FileMode
}

// Spec describes a process that runs in a namespace the way it would in a
// container: in a private mount namespace where Files are laid over the
// machine's directories (read-only overlays: the machine's files stay as
// they are), with empty tmpfs on Tmpfs, and with only the capabilities Caps.
type Spec struct {
	Files map[string]File // by absolute path
	Tmpfs []string        // e.g. /run, /tmp
	Caps  []string        // the capabilities it keeps, e.g. "net_admin"; nil keeps all
	Argv  []string
}

// Proc is a process started by Start.
type Proc struct {
	cmd     *exec.Cmd
	log     *Log
	marker  string
	started time.Time
	done    chan struct{}
	state   *os.ProcessState
}

// Start starts spec in namespace ns. Its stdout and stderr go to one Log,
// as `docker compose logs` shows them. When the lab closes, the process gets
// SIGTERM and two seconds to exit, then SIGKILL.
func (l *Lab) Start(ns string, spec Spec) (*Proc, error) {
	root, err := os.MkdirTemp(l.dir, "files-")
	if err != nil {
		return nil, err
	}
	overlays, err := writeOverlays(root, spec.Files)
	if err != nil {
		return nil, err
	}
	p := &Proc{log: &Log{}, marker: filepath.Join(root, "exec-time"), done: make(chan struct{})}

	// The script runs as root in the new mount namespace. File descriptor 3
	// is opened first: the tmpfs on /tmp may hide the lab's directory.
	script := []string{"set -eu", "exec 3>" + shquote.Word(p.marker)}
	for _, o := range overlays {
		if strings.ContainsAny(o.lower, ":,") {
			return nil, fmt.Errorf("netlab: directory %q cannot be an overlay layer", o.lower)
		}
		script = append(script, fmt.Sprintf("mount -t overlay netlab -o %s %s",
			shquote.Word("lowerdir="+o.lower+":"+o.dir), shquote.Word(o.dir)))
	}
	for _, dir := range spec.Tmpfs {
		mode := "0755"
		if dir == "/tmp" {
			mode = "1777"
		}
		script = append(script, fmt.Sprintf("mount -t tmpfs -o mode=%s,nosuid,nodev netlab %s", mode, shquote.Word(dir)))
	}
	// The time just before the program starts, for benchmarks.
	script = append(script, "date +%s%N >&3", "exec 3>&-")
	argv := spec.Argv
	if spec.Caps != nil {
		argv = append(CapArgv(spec.Caps), argv...)
	}
	script = append(script, "exec "+shquote.Words(argv))

	p.cmd = exec.Command("ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private",
		"sh", "-c", strings.Join(script, "\n"))
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.Dir = l.dir
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		p.log.finish()
		close(p.done)
	}()
	l.addCloser(func() { p.Stop(2 * time.Second) })
	return p, nil
}

// CapArgv returns the setpriv command that runs a program as root with only
// the capabilities caps (and no way to gain others), as Docker's cap_drop
// ALL, cap_add and no-new-privileges do.
func CapArgv(caps []string) []string {
	set := "-all"
	for _, c := range caps {
		set += ",+" + strings.ToLower(c)
	}
	return []string{"setpriv", "--no-new-privs", "--inh-caps=-all", "--bounding-set=" + set, "--"}
}

type overlay struct{ dir, lower string }

// writeOverlays writes files under root, one tree per overlaid directory: the
// deepest directory of the machine that holds a file's path, merged when
// one holds another.
func writeOverlays(root string, files map[string]File) ([]overlay, error) {
	var dirs []string
	for p := range files {
		if !path.IsAbs(p) || path.Clean(p) != p {
			return nil, fmt.Errorf("netlab: %q is not a clean absolute path", p)
		}
		d := path.Dir(p)
		for {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				break
			}
			d = path.Dir(d)
		}
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var tops []string
	for _, d := range dirs {
		if len(tops) > 0 && within(d, tops[len(tops)-1]) {
			continue
		}
		tops = append(tops, d)
	}
	var out []overlay
	for i, top := range tops {
		lower := filepath.Join(root, strconv.Itoa(i))
		if err := os.MkdirAll(lower, 0o755); err != nil {
			return nil, err
		}
		out = append(out, overlay{dir: top, lower: lower})
	}
	for p, f := range files {
		for _, o := range out {
			if !within(p, o.dir) {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(p, o.dir), "/")
			full := filepath.Join(o.lower, rel)
			// A new directory takes the mode of the machine's, else 0755.
			if err := mkdirLike(filepath.Dir(full), o.lower, o.dir); err != nil {
				return nil, err
			}
			mode := f.Mode
			if mode == 0 {
				mode = 0o644
			}
			if err := os.WriteFile(full, f.Data, mode); err != nil {
				return nil, err
			}
			if err := os.Chmod(full, mode); err != nil { // the umask may have taken bits
				return nil, err
			}
		}
	}
	return out, nil
}

func mkdirLike(dir, lower, machine string) error {
	if dir == lower {
		return nil
	}
	if err := mkdirLike(filepath.Dir(dir), lower, machine); err != nil {
		return err
	}
	mode := fs.FileMode(0o755)
	if fi, err := os.Stat(filepath.Join(machine, strings.TrimPrefix(dir, lower))); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, mode)
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Pid returns the process id of the program (every step before it execs).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Log returns its output.
func (p *Proc) Log() *Log { return p.log }

// Output returns its output so far.
func (p *Proc) Output() string { return p.log.String() }

// Started returns the time Start started it.
func (p *Proc) Started() time.Time { return p.started }

// ExecTime returns the time just before the program itself started, after the
// mounts.
func (p *Proc) ExecTime() (time.Time, error) {
	data, err := os.ReadFile(p.marker)
	if err != nil {
		return time.Time{}, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("netlab: bad time %q in %s", data, p.marker)
	}
	return time.Unix(0, ns), nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits up to timeout for the process to exit and returns its exit
// code (-1 for a signal).
func (p *Proc) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.state.ExitCode(), nil
	case <-time.After(timeout):
		return 0, fmt.Errorf("netlab: process %d still runs after %v", p.Pid(), timeout)
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM, waits up to grace, then kills, and returns the exit code.
func (p *Proc) Stop(grace time.Duration) int {
	select {
	case <-p.done:
		return p.state.ExitCode()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code, err := p.Wait(grace); err == nil {
		return code
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return p.state.ExitCode()
}

// Enter runs a command as root in the process's network and mount namespaces
// (as `docker exec` would) and returns its combined output and exit code.
func (p *Proc) Enter(argv ...string) (string, int, error) {
	return p.EnterInput("", argv...)
}

// EnterInput is Enter with stdin on the command's standard input (as
// `docker exec -i` gives it).
func (p *Proc) EnterInput(stdin string, argv ...string) (string, int, error) {
	cmd := exec.Command("nsenter", append([]string{"--target", strconv.Itoa(p.Pid()), "--mount", "--net", "--"}, argv...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode(), nil
	}
	return string(out), 0, err
}
