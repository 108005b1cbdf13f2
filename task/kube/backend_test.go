package kube

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const getPods = "--context c1 --namespace ns get pods -l batch.kubernetes.io/job-name=acme-task-t1 -o json"

// podList is kubectl get pods' answer: one Pod whose agent container is in
// state.
func podList(t *testing.T, state corev1.ContainerState) string {
	t.Helper()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "agent", State: state}}}}
	data, err := json.Marshal(corev1.PodList{Items: []corev1.Pod{pod}})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func newBackend(t *testing.T, answers map[string]any) (*Backend, *sandbox.FakeRunner) {
	f := &sandbox.FakeRunner{T: t, Answers: answers}
	rec := &task.Record{Name: "t1", Job: "acme-task-t1", Pod: "pod1", Branch: "agentbox/t1", On: task.OnKubernetes,
		KubeContext: "c1", KubeNamespace: "ns"}
	b := New(&task.Prepared{Rec: rec, Cfg: &config.Config{Name: "acme", Workspace: "/workspace"}, Kubectl: "kubectl"}, nil)
	b.K.Runner = &lockedRunner{r: f}
	return b, f
}

// lockedRunner runs one command at a time: Collect asks for the egress log
// and the branch at once, and the fake keeps its record unlocked.
type lockedRunner struct {
	mu sync.Mutex
	r  sandbox.Runner
}

func (l *lockedRunner) Run(ctx context.Context, c sandbox.Cmd) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Run(ctx, c)
}

// TestAgent: the agent's state is its container's in the task's Pod:
// running until it terminates, then its exit code and end; no Pod, no
// agent.
func TestAgent(t *testing.T) {
	end := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, pods string
		want       *task.AgentState
	}{
		{"running", podList(t, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}), &task.AgentState{Running: true}},
		{"ended", podList(t, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 7, FinishedAt: metav1.NewTime(end)}}),
			&task.AgentState{Exit: ptr(7), Finished: end}},
		{"gone", `{"items":[]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBackend(t, map[string]any{getPods: tc.pods})
			got, err := b.Agent(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || got != nil && (got.Running != tc.want.Running ||
				(got.Exit == nil) != (tc.want.Exit == nil) || got.Exit != nil && *got.Exit != *tc.want.Exit || !got.Finished.Equal(tc.want.Finished)) {
				t.Errorf("Agent = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func ptr(n int) *int { return &n }

// TestCollect: the branch comes from the collect container (kubectl exec
// of the bundle script, told to end the Pod after) through fetch's checks
// into the host repository, the refusals from egress's log; a Pod that is
// gone is not collected.
func TestCollect(t *testing.T) {
	host, bundle := hostAndBundle(t)
	script := "trap 'touch " + generator.CollectDone + "' EXIT; " + task.BundleScript("/workspace")
	b, f := newBackend(t, map[string]any{
		getPods: podList(t, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}),
		"--context c1 --namespace ns logs pod1 -c egress --timestamps":                   "dnsmasq[9]: config evil.example is NXDOMAIN\n",
		"--context c1 --namespace ns exec pod1 -c collect -- sh -c " + script + " sh t1": bundle,
	})
	b.P.Rec.Dir = host
	b.P.Rec.Base = git(t, host, "rev-parse", "HEAD")
	if _, err := b.Agent(t.Context()); err != nil {
		t.Fatal(err)
	}
	sum := task.NewSummary(b.P.Rec, false, false, ptr(0))
	b.Collect(t.Context(), sum, false)
	if sum.BranchStatus != "new" || len(sum.Commits) != 1 || len(sum.RefusedNames) != 1 {
		t.Errorf("status %q, commits %q, refused %+v (kubectl ran %q)", sum.BranchStatus, sum.Commits, sum.RefusedNames, f.Ran)
	}
	if got := git(t, host, "rev-parse", "refs/heads/agentbox/t1"); got == b.P.Rec.Base {
		t.Errorf("the host's branch is at the base")
	}

	b, _ = newBackend(t, map[string]any{getPods: `{"items":[]}`})
	if _, err := b.Agent(t.Context()); err != nil {
		t.Fatal(err)
	}
	sum = task.NewSummary(b.P.Rec, false, false, nil)
	b.Collect(t.Context(), sum, false)
	if sum.BranchStatus != "not collected: the task's pod is gone" {
		t.Errorf("status %q", sum.BranchStatus)
	}
}

// TestRemove deletes the task's Job, which takes its Pod, Secret and
// ConfigMap along.
func TestRemove(t *testing.T) {
	b, f := newBackend(t, map[string]any{
		"--context c1 --namespace ns delete job acme-task-t1 --ignore-not-found --cascade=foreground --timeout=60s": "",
	})
	if err := b.Remove(t.Context()); err != nil || len(f.Ran) != 1 {
		t.Errorf("Remove: %v; kubectl ran %q", err, f.Ran)
	}
}

// hostAndBundle makes a host repository and a bundle, as the collect
// script writes it, of a task branch t1 one commit past the host's HEAD.
func hostAndBundle(t *testing.T) (host, bundle string) {
	t.Helper()
	testenv.RequireProgram(t, "git")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "none"))
	host = filepath.Join(t.TempDir(), "host")
	git(t, ".", "init", "-q", "-b", "main", host)
	commit(t, host, "a.txt")
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, ".", "clone", "-q", host, clone)
	git(t, clone, "checkout", "-q", "-b", "t1")
	commit(t, clone, "b.txt")
	out := filepath.Join(t.TempDir(), "b.bundle")
	git(t, clone, "bundle", "create", "-q", out, "refs/heads/t1")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return host, string(data)
}

func commit(t *testing.T, repo, file string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, file), []byte(file+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "-A")
	git(t, repo, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "add "+file)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
