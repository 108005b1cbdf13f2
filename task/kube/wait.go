package kube

// Waiting for the task's Pod, and saying what holds it up.

import (
	"context"
	"encoding/json"
	"fmt"

	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/termsafe"
	corev1 "k8s.io/api/core/v1"
)

// stuckLimit is how long a Pod may stay in trouble (a waiting reason of
// troubles, no place on a node, or a warning event) without a container
// moving on before the wait gives up. A slow image pull is no trouble: it
// is waited for until the wait's own limit.
const stuckLimit = 2 * time.Minute

// quietWarnings: the warning events of a Pod that moved on this recently
// are not yet trouble.
const quietWarnings = 5 * time.Second

// troubles are the waiting reasons of a container that does not start by
// itself soon; hopeless never mends.
var (
	troubles = []string{"ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff", "CreateContainerConfigError",
		"CreateContainerError", "RunContainerError", "InvalidImageName", "ErrImageNeverPull"}
	hopeless = []string{"InvalidImageName", "ErrImageNeverPull"}
)

// waitPod polls the task's Pod until ok says so, the Pod ends, it has been
// in trouble for stuckLimit before its agent started, or limit is up.
// Each new trouble is said on b.Stderr as it is seen: the user learns at
// once why the task does not start, where a wait of minutes said nothing.
func (b *Backend) waitPod(ctx context.Context, ok func(*corev1.Pod) bool, limit time.Duration) (*corev1.Pod, error) {
	start := time.Now()
	end := start.Add(limit)
	w := podWatch{limit: b.stuckLimit, said: map[string]bool{}}
	if w.limit == 0 {
		w.limit = stuckLimit
	}
	var lastEvents time.Time
	var warning string
	for {
		pod, err := b.getPod(ctx)
		if err != nil {
			return nil, err
		}
		if pod != nil && ok(pod) {
			return pod, nil
		}
		if pod != nil && (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) {
			return pod, fmt.Errorf("the task's pod %s ended (%s): %s", pod.Name, pod.Status.Phase, podProblem(pod))
		}
		now := time.Now()
		// Trouble is watched for until the agent has started: after, the
		// wait is for its end, and a sidecar's restart or a warning event
		// is no reason to stop waiting for it.
		if pod != nil && !agentStarted(pod) {
			// The events tell what the Pod's status does not (a sandbox
			// that cannot be made, a volume that cannot be mounted); they
			// are read once a second, after the first.
			if now.Sub(start) >= time.Second && now.Sub(lastEvents) >= time.Second {
				lastEvents = now
				warning = b.lastWarning(ctx, pod.Name)
			}
			if err := w.see(pod, warning, now); err != nil {
				return pod, err
			}
			for _, m := range w.news() {
				if b.Stderr != nil {
					fmt.Fprintf(b.Stderr, "agentbox: task %s waits for its pod %s: %s\n", b.P.Rec.Name, pod.Name, termsafe.Message(m))
				}
			}
		}
		if now.After(end) {
			why := "no pod"
			if pod != nil {
				why = podProblem(pod)
			}
			return pod, fmt.Errorf("the task's pod did not get there within %s: %s", limit, why)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lastWarning is the newest Warning event of the Pod, as "reason:
// message", "" when there is none (or kubectl cannot tell).
func (b *Backend) lastWarning(ctx context.Context, pod string) string {
	out, err := b.K.run(ctx, nil, "get", "events", "--field-selector", "type=Warning,involvedObject.name="+pod, "-o", "json")
	if err != nil {
		return ""
	}
	var list corev1.EventList
	if json.Unmarshal(out, &list) != nil || len(list.Items) == 0 {
		return ""
	}
	when := func(e *corev1.Event) time.Time {
		if !e.LastTimestamp.IsZero() {
			return e.LastTimestamp.Time
		}
		if !e.EventTime.IsZero() {
			return e.EventTime.Time
		}
		return e.CreationTimestamp.Time
	}
	last := slices.MaxFunc(list.Items, func(x, y corev1.Event) int { return when(&x).Compare(when(&y)) })
	return last.Reason + ": " + strings.TrimSpace(last.Message)
}

// podWatch follows one Pod's way to running: what troubles it, since when
// it has not moved on, and what it has said of it.
type podWatch struct {
	limit    time.Duration
	progress string    // the containers' states, as last seen
	moved    time.Time // when progress last changed
	troubled time.Time // when trouble was first seen since
	warning  string    // the warning event of the last progress, old news
	said     map[string]bool
	pending  []string
}

// see takes a look at pod, with its newest warning event; it fails when
// the Pod has been in trouble for the limit without moving on, or is in
// hopeless trouble.
func (w *podWatch) see(pod *corev1.Pod, warning string, now time.Time) error {
	if p := podProgress(pod); p != w.progress || w.moved.IsZero() {
		w.progress, w.moved, w.warning, w.troubled = p, now, warning, time.Time{}
	}
	why, never := podTrouble(pod)
	// A warning counts once the Pod has stood still a while: a sidecar's
	// first failed probe, say, is no trouble.
	if why == "" && warning != "" && warning != w.warning && now.Sub(w.moved) >= quietWarnings {
		why = warning
	}
	if why == "" {
		return nil
	}
	if w.troubled.IsZero() {
		w.troubled = now
	}
	if !w.said[why] {
		w.said[why] = true
		w.pending = append(w.pending, why)
	}
	if never || now.Sub(w.troubled) >= w.limit {
		return fmt.Errorf("the task's pod %s cannot start: %s", pod.Name, why)
	}
	return nil
}

// news are the troubles seen since the last call, each said once.
func (w *podWatch) news() []string {
	n := w.pending
	w.pending = nil
	return n
}

// podProgress is the Pod's way so far: each container's state, whether it
// started; restarts are no progress.
func podProgress(pod *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(string(pod.Status.Phase))
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		state := "waiting"
		switch {
		case cs.State.Running != nil:
			state = "running"
		case cs.State.Terminated != nil:
			state = "terminated"
		}
		fmt.Fprintf(&b, " %s=%s,%v", cs.Name, state, cs.Started != nil && *cs.Started)
	}
	return b.String()
}

// podTrouble is what holds the Pod up, from its status: no node for it, or
// a container waiting for a reason of troubles; never says it will not
// mend.
func podTrouble(pod *corev1.Pod) (why string, never bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return "no node takes it: " + c.Message, false
		}
	}
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && slices.Contains(troubles, w.Reason) {
			why := fmt.Sprintf("container %s: %s", cs.Name, w.Reason)
			if w.Message != "" {
				why += ": " + w.Message
			}
			if t := cs.LastTerminationState.Terminated; t != nil {
				why += fmt.Sprintf(" (it exited %d, %s; restarted %d times)", t.ExitCode, t.Reason, cs.RestartCount)
			}
			return why, slices.Contains(hopeless, w.Reason)
		}
	}
	return "", false
}

// podProblem says what a Pod waits for or why it failed.
func podProblem(pod *corev1.Pod) string {
	if why, _ := podTrouble(pod); why != "" {
		return why
	}
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return fmt.Sprintf("container %s: %s %s", cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("container %s exited %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	return fmt.Sprintf("phase %s %s", pod.Status.Phase, pod.Status.Message)
}
