package netlab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Prefix starts the name of every namespace and directory a Lab creates:
// Prefix, the pid of the test process, a number, and the role.
const Prefix = "netlab-"

var (
	labCount     atomic.Int64
	leftoverOnce sync.Once
	leftoverName = regexp.MustCompile(`^` + Prefix + `([0-9]+)-`)
)

// Lab is a set of network namespaces of one test. Close, which New registers
// with t.Cleanup, kills every process in them and deletes them.
type Lab struct {
	t          testing.TB
	name       string // Prefix + pid + "-" + number
	dir        string // working directory every uid may read
	bin        string // the test binary, in dir
	helperTest string

	mu         sync.Mutex
	namespaces []string
	closers    []func()
}

// New creates an empty lab. helperTest names the test function that calls
// HelperMain; helpers run the test binary with -test.run selecting it. New
// first removes what earlier test processes that no longer run left behind.
func New(t testing.TB, helperTest string) *Lab {
	t.Helper()
	leftoverOnce.Do(removeLeftovers)
	l := &Lab{
		t:          t,
		name:       fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), labCount.Add(1)),
		helperTest: helperTest,
	}
	t.Cleanup(l.Close)
	dir, err := os.MkdirTemp("", l.name+"-")
	if err != nil {
		t.Fatal(err)
	}
	l.dir = dir
	// MkdirTemp makes the directory 0700 and the test binary usually lives
	// in another 0700 directory: an unprivileged helper could run neither.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if l.bin, err = linkExecutable(dir); err != nil {
		t.Fatalf("netlab: %v", err)
	}
	return l
}

// Dir returns the lab's working directory, readable by every uid.
func (l *Lab) Dir() string { return l.dir }

// linkExecutable makes the running test binary available in dir, mode 0755:
// a hard link if it can, else a copy.
func linkExecutable(dir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "helper.test")
	if fi, err := os.Stat(exe); err == nil && fi.Mode().Perm()&0o005 == 0o005 {
		if os.Link(exe, dst) == nil {
			return dst, nil
		}
	}
	src, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}

// Namespace creates the network namespace of role, with its loopback up,
// and returns its name.
func (l *Lab) Namespace(role string) string {
	l.t.Helper()
	ns := l.name + "-" + role
	if _, err := run("ip", "netns", "add", ns); err != nil {
		l.t.Fatalf("netlab: %v", err)
	}
	l.mu.Lock()
	l.namespaces = append(l.namespaces, ns)
	l.mu.Unlock()
	l.IP(ns, "link set lo up")
	return ns
}

// Veth links namespace a (interface ifA) and b (ifB) with a veth pair, and
// brings both ends up. The pair is created in the namespaces directly: it
// never exists in the machine's own namespace.
//
// Add addresses after Veth: an IPv6 address added while its link is down
// answers neighbor solicitations only about a second after the link comes
// up, and the first packet to it waits that long.
func (l *Lab) Veth(a, ifA, b, ifB string) {
	l.t.Helper()
	if _, err := run("ip", "link", "add", ifA, "netns", a, "type", "veth", "peer", "name", ifB, "netns", b); err != nil {
		l.t.Fatalf("netlab: %v", err)
	}
	l.IP(a, "link set "+ifA+" up")
	l.IP(b, "link set "+ifB+" up")
}

// IP runs commands of ip(8) in namespace ns, one per argument, in one batch
// ("addr add 198.18.0.1/24 dev eth0").
func (l *Lab) IP(ns string, cmds ...string) {
	l.t.Helper()
	cmd := exec.Command("ip", "-n", ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		l.t.Fatalf("netlab: ip -n %s: %v\n%s\ncommands:\n%s", ns, err, out, strings.Join(cmds, "\n"))
	}
}

// Sysctl sets a sysctl of namespace ns, e.g. "net/ipv4/ping_group_range".
func (l *Lab) Sysctl(ns, key, value string) {
	l.t.Helper()
	if _, err := l.Exec(ns, "sh", "-c", `printf '%s\n' "$2" > "/proc/sys/$1"`, "sh", key, value); err != nil {
		l.t.Fatalf("netlab: %v", err)
	}
}

// Exec runs a command as root in namespace ns and returns its combined
// output; the error includes the output.
func (l *Lab) Exec(ns string, argv ...string) (string, error) {
	return run("ip", append([]string{"netns", "exec", ns}, argv...)...)
}

func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

func (l *Lab) addCloser(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closers = append(l.closers, f)
}

// Close stops the lab's processes (the latest first), kills whatever still
// runs in its namespaces, deletes them and removes the working directory.
// Errors are reported, not fatal, so that everything is tried.
func (l *Lab) Close() {
	l.mu.Lock()
	closers, namespaces := l.closers, l.namespaces
	l.closers, l.namespaces = nil, nil
	l.mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	for _, ns := range namespaces {
		if err := removeNamespace(ns); err != nil {
			l.t.Errorf("netlab: %v", err)
		}
	}
	if l.dir != "" {
		if err := os.RemoveAll(l.dir); err != nil {
			l.t.Errorf("netlab: %v", err)
		}
	}
}

// removeNamespace kills the processes in namespace ns, all of which a lab
// started, and deletes it.
func removeNamespace(ns string) error {
	for range 50 {
		out, err := run("ip", "netns", "pids", ns)
		if err != nil {
			break
		}
		pids := strings.Fields(out)
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err := run("ip", "netns", "del", ns)
	return err
}

// removeLeftovers deletes the namespaces and directories of labs whose test
// process no longer runs (a crash, or a kill before cleanup).
func removeLeftovers() {
	dead := func(name string) bool {
		m := leftoverName.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() {
			return false
		}
		err := syscall.Kill(pid, 0)
		return errors.Is(err, syscall.ESRCH)
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if dead(e.Name()) {
				_ = removeNamespace(e.Name())
			}
		}
	}
	if entries, err := os.ReadDir(os.TempDir()); err == nil {
		for _, e := range entries {
			if e.IsDir() && dead(e.Name()) {
				_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
			}
		}
	}
}
