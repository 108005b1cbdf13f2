package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodProblem says what a Pod waits for.
func TestPodProblem(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
		{Name: "egress", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}}}
	if got := podProblem(pod); got != "container egress: ErrImagePull: not found" {
		t.Errorf("podProblem = %q", got)
	}
}
