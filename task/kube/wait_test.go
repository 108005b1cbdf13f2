package kube

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pod is a task's Pod in phase whose containers are in the states given.
func pod(phase corev1.PodPhase, egress, agent corev1.ContainerState) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1"}, Status: corev1.PodStatus{Phase: phase,
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "egress", State: egress}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "agent", State: agent}}}}
}

func waiting(reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

var running = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}

// TestWaitPodGivesUp: a Pod whose image cannot be pulled fails the wait
// once it has stood still for the limit, with the reason, which the user
// heard of as soon as it was seen (once); the CI run that waited ten
// silent minutes for a Pod that could never start is why.
func TestWaitPodGivesUp(t *testing.T) {
	stuck := pod(corev1.PodPending, running, waiting("ImagePullBackOff", `Back-off pulling image "r:5000/a"`))
	data, err := json.Marshal(corev1.PodList{Items: []corev1.Pod{*stuck}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newBackend(t, map[string]any{getPods: string(data),
		"--context c1 --namespace ns get events --field-selector type=Warning,involvedObject.name=pod1 -o json": `{"items":[]}`})
	var stderr bytes.Buffer
	b.Stderr, b.stuckLimit = &stderr, 400*time.Millisecond
	t0 := time.Now()
	_, err = b.waitPod(t.Context(), agentStarted, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "cannot start: container agent: ImagePullBackOff: Back-off pulling image") {
		t.Fatalf("waitPod: %v", err)
	}
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("gave up after %s", took)
	}
	if got := strings.Count(stderr.String(), "\n"); got != 1 || !strings.Contains(stderr.String(), "task t1 waits for its pod pod1: container agent: ImagePullBackOff") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// TestWaitPodHopeless: a name that is no image fails at once.
func TestWaitPodHopeless(t *testing.T) {
	p := pod(corev1.PodPending, running, waiting("InvalidImageName", "bad"))
	data, _ := json.Marshal(corev1.PodList{Items: []corev1.Pod{*p}})
	b, _ := newBackend(t, map[string]any{getPods: string(data)})
	if _, err := b.waitPod(t.Context(), agentStarted, time.Minute); err == nil || !strings.Contains(err.Error(), "InvalidImageName") {
		t.Fatalf("waitPod: %v", err)
	}
}

// TestWaitPodStarts: a Pod that moves on is waited for, whatever it
// passes through on the way.
func TestWaitPodStarts(t *testing.T) {
	states := []*corev1.Pod{
		pod(corev1.PodPending, waiting("ContainerCreating", ""), waiting("PodInitializing", "")),
		pod(corev1.PodPending, running, waiting("PodInitializing", "")),
		pod(corev1.PodRunning, running, running),
	}
	i := 0
	b, f := newBackend(t, map[string]any{getPods: func() string {
		data, _ := json.Marshal(corev1.PodList{Items: []corev1.Pod{*states[min(i, len(states)-1)]}})
		i++
		return string(data)
	}})
	var stderr bytes.Buffer
	b.Stderr = &stderr
	p, err := b.waitPod(t.Context(), agentStarted, time.Minute)
	if err != nil || p == nil || stderr.Len() > 0 {
		t.Fatalf("waitPod: %v; stderr %q; kubectl ran %q", err, stderr.String(), f.Ran)
	}
}

// TestPodWatch: a warning event is trouble once the Pod has stood still a
// while, said once; the wait gives up when the Pod has been in trouble,
// not moving on, for the limit; a container that moves on starts the count again; a warning
// from before the last move is old news.
func TestPodWatch(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	creating := pod(corev1.PodPending, waiting("ContainerCreating", ""), waiting("PodInitializing", ""))
	sandbox := `FailedCreatePodSandBox: failed to get sandbox image "agentbox.local/pause:3.10.1"`
	w := podWatch{limit: time.Minute, said: map[string]bool{}}
	steps := []struct {
		at      float64
		pod     *corev1.Pod
		warning string
		news    int
		fails   bool
	}{
		{0, creating, "", 0, false},
		{1, creating, sandbox, 0, false}, // too soon to tell
		{6, creating, sandbox, 1, false},
		{30, creating, sandbox, 0, false}, // said already
		{65, creating, sandbox, 0, false},
		{66, creating, sandbox, 0, true}, // in trouble since 6 s
	}
	for _, s := range steps {
		err := w.see(s.pod, s.warning, at(s.at))
		if n := len(w.news()); n != s.news || (err != nil) != s.fails {
			t.Errorf("at %vs: %d news, error %v", s.at, n, err)
		}
	}

	w = podWatch{limit: time.Minute, said: map[string]bool{}}
	unhealthy := "Unhealthy: Startup probe failed"
	started := pod(corev1.PodPending, running, waiting("PodInitializing", ""))
	for _, s := range []struct {
		at      float64
		pod     *corev1.Pod
		warning string
		fails   bool
	}{
		{0, creating, unhealthy, false},
		{50, started, unhealthy, false}, // moved on: the warning is old news
		{100, started, unhealthy, false},
		{200, started, "BackOff: restarting failed container egress", false},
	} {
		err := w.see(s.pod, s.warning, at(s.at))
		if (err != nil) != s.fails {
			t.Errorf("at %vs: error %v", s.at, err)
		}
	}
	if err := w.see(started, "BackOff: restarting failed container egress", at(260)); err == nil {
		t.Errorf("a Pod in trouble since 200 s did not fail the wait at 260 s")
	}
}

// TestPodTrouble: the reasons that hold a Pod up, from its status.
func TestPodTrouble(t *testing.T) {
	unsched := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: disk-pressure"}}}}
	crash := pod(corev1.PodPending, waiting("CrashLoopBackOff", "back-off 40s"), waiting("PodInitializing", ""))
	crash.Status.InitContainerStatuses[0].RestartCount = 3
	crash.Status.InitContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
	for _, tc := range []struct {
		pod   *corev1.Pod
		want  string
		never bool
	}{
		{unsched, "no node takes it: 0/1 nodes are available: disk-pressure", false},
		{crash, "container egress: CrashLoopBackOff: back-off 40s (it exited 137, OOMKilled; restarted 3 times)", false},
		{pod(corev1.PodPending, running, waiting("ErrImageNeverPull", "x")), "container agent: ErrImageNeverPull: x", true},
		{pod(corev1.PodPending, running, waiting("ContainerCreating", "")), "", false},
	} {
		if got, never := podTrouble(tc.pod); got != tc.want || never != tc.never {
			t.Errorf("podTrouble = %q, %v; want %q, %v", got, never, tc.want, tc.never)
		}
	}
}

// TestWaitPodAfterStart: once the agent has started, the wait for its end
// is no wait for the Pod to start: a sidecar in trouble or a warning event
// while the agent works does not end it early as a Pod that "cannot
// start", and the events are not read.
func TestWaitPodAfterStart(t *testing.T) {
	p := pod(corev1.PodRunning, waiting("CrashLoopBackOff", "back-off 40s"), running)
	data, _ := json.Marshal(corev1.PodList{Items: []corev1.Pod{*p}})
	b, f := newBackend(t, map[string]any{getPods: string(data)})
	var stderr bytes.Buffer
	b.Stderr, b.stuckLimit = &stderr, 100*time.Millisecond
	_, err := b.waitPod(t.Context(), agentEnded, 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not get there within") {
		t.Errorf("waitPod: %v, want the wait's own limit", err)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
	for _, c := range f.Ran {
		if strings.Contains(c, "get events") {
			t.Errorf("kubectl ran %q while the agent worked", c)
		}
	}
}
