//go:build k8s

package k8stest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// cluster drives scripts/k8s/cluster.sh.
type cluster struct {
	t      *testing.T
	root   string            // the repository
	script string            // scripts/k8s/cluster.sh
	env    map[string]string // cluster.sh env: STATE, BIN, BRIDGE, SUBNET, KUBECONFIG
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, root: root, script: filepath.Join(root, "scripts", "k8s", "cluster.sh")}
	out := c.sh(time.Minute, "env")
	c.env = map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("cluster.sh env: bad line %q", l)
		}
		c.env[k] = v
	}
	for _, k := range []string{"STATE", "BIN", "BRIDGE", "SUBNET", "KUBECONFIG"} {
		if c.env[k] == "" {
			t.Fatalf("cluster.sh env does not say %s:\n%s", k, out)
		}
	}
	return c
}

// sh runs cluster.sh with args and returns its stdout; it fails the test
// with both outputs when the script fails.
func (c *cluster) sh(timeout time.Duration, args ...string) string {
	c.t.Helper()
	out, err := run(timeout, "", "bash", append([]string{c.script}, args...)...)
	if err != nil {
		c.t.Fatalf("cluster.sh %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// kubectl runs kubectl on the cluster.
func (c *cluster) kubectl(args ...string) (string, error) {
	return run(5*time.Minute, "", "kubectl", append([]string{"--kubeconfig", c.env["KUBECONFIG"]}, args...)...)
}

func (c *cluster) mustKubectl(args ...string) string {
	c.t.Helper()
	out, err := c.kubectl(args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// applyJob renders testdata/sandbox-job.yaml.tmpl and applies it.
func (c *cluster) applyJob(j job) {
	c.t.Helper()
	f := filepath.Join(c.t.TempDir(), j.Name+".yaml")
	if err := os.WriteFile(f, renderJob(c.t, j), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.mustKubectl("apply", "-f", f)
}

// job is the template's view.
type job struct {
	Name, Namespace, Image, PullPolicy string
	Deadline                           int
	AgentTail                          string // the agent script's last line
}

func renderJob(t *testing.T, j job) []byte {
	t.Helper()
	tmpl, err := template.New("sandbox-job.yaml.tmpl").Option("missingkey=error").
		ParseFiles(filepath.Join("testdata", "sandbox-job.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, j); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// run runs a command and returns its stdout; the error carries stderr.
func run(timeout time.Duration, stdin string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\nstdout:\n%s\nstderr:\n%s",
			name, strings.Join(args, " "), err, tail(stdout.String(), 40), tail(stderr.String(), 60))
	}
	return stdout.String(), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// requirements skips (or under CI=true fails) when the machine cannot run
// the test.
func requirements(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, p := range []string{"bash", "go", "docker", "apt-get", "iptables", "ip"} {
		testenv.RequireProgram(t, p)
	}
	const setup = "run: bash scripts/e2e/setup.sh && bash scripts/e2e/base-image.sh"
	if _, err := run(time.Minute, "", "docker", "image", "inspect", "--format", "{{.Id}}", baseImage); err != nil {
		testenv.Unavailable(t, fmt.Sprintf("the base image %s is missing (%v); %s", baseImage, firstLine(err), setup))
	}
}

func firstLine(err error) string {
	l, _, _ := strings.Cut(err.Error(), "\n")
	return l
}

// startRegistry builds and starts internal/e2e/registry on a free loopback
// port and returns its address; it stops with the test.
func startRegistry(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "registry")
	if _, err := run(5*time.Minute, "", "go", "build", "-C", root, "-o", bin, "./internal/e2e/registry"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-blobs-dir", filepath.Join(t.TempDir(), "blobs"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("the registry exited: %s", stderr.String())
	}
	addr, ok := strings.CutPrefix(sc.Text(), "registry ")
	if !ok {
		t.Fatalf("the registry said %q", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return addr
}
