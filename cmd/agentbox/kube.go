package main

// agentbox run --on kubernetes: a task as a Job made from the generated
// template (.agentbox/kubernetes/job.yaml). The Job's Pod is the sandbox:
// egress as a native sidecar keeps the deadline, the agent container's
// entrypoint clones the task's clone from a git bundle (in a ConfigMap, or
// written with kubectl exec) and runs the command, and the collect container (another uid, the workspace
// read-only) hands the task's branch back as a bundle, which the host takes
// through agentbox fetch's checks, as for a local task.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/iolimit"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
	"github.com/agentbox-dev/agentbox/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// kubeTarget is kubectl on one context and namespace.
type kubeTarget struct {
	kubectl   string
	context   string
	namespace string
}

// checkKubectl finds kubectl.
func checkKubectl() (string, error) {
	k, err := exec.LookPath("kubectl")
	if err != nil {
		return "", errors.New("kubectl is not installed (or not on PATH): agentbox run --on kubernetes drives the cluster with it")
	}
	return k, nil
}

func (k kubeTarget) command(ctx context.Context, args ...string) *exec.Cmd {
	a := []string{}
	if k.context != "" {
		a = append(a, "--context", k.context)
	}
	a = append(a, "--namespace", k.namespace)
	return exec.CommandContext(ctx, k.kubectl, append(a, args...)...)
}

// run runs kubectl with stdin and returns its stdout; an error carries the
// first line of its stderr.
func (k kubeTarget) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := k.command(ctx, args...)
	cmd.Stdin = stdin
	var errb iolimit.Head
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %s", args[0], sandbox.FirstLine(errb.Bytes(), err))
	}
	return out, nil
}

// kubeJobName is the Job of a task: NAME-task-TASK, which must be a
// label value (its Pods carry it), at most 63 characters.
func kubeJobName(project, task string) (string, error) {
	n := generator.TaskProject(project, task)
	if len(n) > 63 {
		return "", usageErrorf("the task's Job name %s is longer than 63 characters; choose a shorter --name", n)
	}
	return n, nil
}

// kubeDigests resolves the images of the Job template to tag@digest: the
// Job runs exactly what agentbox build --push pushed.
func kubeDigests(ctx context.Context, files map[string][]byte) (map[string]string, error) {
	imgs, err := generator.JobImages(files)
	if err != nil {
		return nil, err
	}
	r := images.NewRegistryResolver(images.RegistryOptions{})
	out := map[string]string{}
	for _, img := range imgs {
		ref, err := images.ParseRef(img)
		if err != nil {
			return nil, err
		}
		d, err := r.Resolve(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("image %s is not in its registry (agentbox build --push pushes it): %v", img, err)
		}
		out[img] = img + "@" + d
	}
	return out, nil
}

// startKube creates the task's Job (and the Secret of run.env), and
// delivers the task's clone to its agent container.
func startKube(ctx context.Context, p *prepared, stderr io.Writer) error {
	codeMap, err := createKubeJob(ctx, p)
	if err != nil {
		return p.failKube(ctx, err)
	}
	// With the clone in a ConfigMap the Pod needs only to be there; else
	// the agent container must run to be handed the clone.
	ready := func(s *corev1.Pod) bool { return containerRunning(s.Status.ContainerStatuses, "agent") }
	if codeMap != "" {
		ready = func(*corev1.Pod) bool { return true }
	}
	pod, err := waitPod(ctx, p, ready, 10*time.Minute)
	if err != nil {
		return p.failKube(ctx, err)
	}
	p.rec.Pod = pod.Name
	if err := p.rec.Write(p.cfg.Name); err != nil {
		return p.failKube(ctx, err)
	}
	if codeMap == "" {
		if err := deliverBundle(ctx, p, pod.Name); err != nil {
			return p.failKube(ctx, err)
		}
	}
	fmt.Fprintf(stderr, "agentbox: task %s runs as Job %s (pod %s, namespace %s)\n", p.rec.Name, p.rec.Job, pod.Name, p.kube.namespace)
	return nil
}

// createKubeJob creates the task's Job, the Secret of run.env and, for a
// small clone, the ConfigMap that carries it (codeMap, owned by the Job).
func createKubeJob(ctx context.Context, p *prepared) (codeMap string, err error) {
	digests, err := kubeDigests(ctx, p.files)
	if err != nil {
		return "", err
	}
	secret := ""
	if len(p.cfg.TaskEnv()) > 0 {
		secret = p.rec.Job + "-env"
	}
	bundlePath := filepath.Join(p.dir, "task.bundle")
	if fi, err := os.Stat(bundlePath); err == nil && fi.Size() <= maxInlineBundle {
		codeMap = p.rec.Job + "-code"
		if err := createCodeMap(ctx, p, codeMap, bundlePath); err != nil {
			return "", err
		}
	}
	job, err := generator.TaskJob(p.cfg, p.files, p.task(), generator.KubeTask{Job: p.rec.Job, Digests: digests, Secret: secret, CodeMap: codeMap})
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(job)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(p.dir, "job.json"), data, 0o600); err != nil {
		return "", err
	}
	uid, err := p.kube.run(ctx, bytes.NewReader(data), "create", "-f", "-", "-o", "jsonpath={.metadata.uid}")
	if err != nil {
		return "", fmt.Errorf("creating the task's Job: %w", err)
	}
	if secret != "" {
		if err := createEnvSecret(ctx, p, secret, string(uid)); err != nil {
			return "", err
		}
	}
	if codeMap != "" {
		owner := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":%q,"uid":%q}]}}`, p.rec.Job, uid)
		if _, err := p.kube.run(ctx, nil, "patch", "configmap", codeMap, "--type=merge", "-p", owner); err != nil {
			return "", fmt.Errorf("making the Job own the clone's ConfigMap: %w", err)
		}
	}
	return codeMap, nil
}

// deliverBundle writes the task's clone (a bundle) into the running agent
// container of pod, where its entrypoint waits for it.
func deliverBundle(ctx context.Context, p *prepared, pod string) error {
	bundle, err := os.Open(filepath.Join(p.dir, "task.bundle"))
	if err != nil {
		return err
	}
	defer bundle.Close()
	script := `cat > "$0.tmp" && mv "$0.tmp" "$0" && : > "$0.done"`
	if _, err := p.kube.run(ctx, bundle, "exec", "-i", pod, "-c", "agent", "--", "sh", "-c", script, generator.ReceiveBundle); err != nil {
		return fmt.Errorf("delivering the task's clone: %w", err)
	}
	return nil
}

// maxInlineBundle is the largest clone that reaches the Pod in a ConfigMap
// (a Kubernetes object holds at most 1 MiB, base64 makes 4 bytes of 3); a
// larger one is written into the agent container with kubectl exec.
const maxInlineBundle = 700 << 10

// createCodeMap makes the ConfigMap that carries the task's clone, and the
// file that tells the agent's entrypoint it is complete.
func createCodeMap(ctx context.Context, p *prepared, name, bundlePath string) error {
	data, err := os.ReadFile(bundlePath)
	if err != nil {
		return err
	}
	base := filepath.Base(generator.ReceiveBundle)
	cm := corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{generator.TaskLabel: p.rec.Name}},
		BinaryData: map[string][]byte{base: data},
		Data:       map[string]string{base + ".done": ""},
	}
	j, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	if _, err := p.kube.run(ctx, bytes.NewReader(j), "create", "-f", "-"); err != nil {
		return fmt.Errorf("creating the ConfigMap of the task's clone: %w", err)
	}
	return nil
}

// createEnvSecret makes the Secret that holds the values of secrets and
// run.env (from the environment or the secrets file), owned by
// the Job (so it goes with it).
func createEnvSecret(ctx context.Context, p *prepared, name, jobUID string) error {
	s := corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{generator.TaskLabel: p.rec.Name}},
		StringData: map[string]string{},
	}
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: p.rec.Job, UID: types.UID(jobUID)}}
	env, err := sandbox.Environ("up") // the environment, and the secrets file
	if err != nil {
		return err
	}
	for _, n := range p.cfg.TaskEnv() {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, n+"="); ok {
				s.StringData[n] = v
				break
			}
		}
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if _, err := p.kube.run(ctx, bytes.NewReader(data), "create", "-f", "-"); err != nil {
		return fmt.Errorf("creating the Secret of run.env: %w", err)
	}
	return nil
}

// failKube removes what startKube made and the task's directory.
func (p *prepared) failKube(ctx context.Context, err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_, _ = p.kube.run(ctx, nil, "delete", "job", p.rec.Job, "--ignore-not-found", "--wait=false", "--cascade=background")
	_, _ = p.kube.run(ctx, nil, "delete", "configmap", p.rec.Job+"-code", "--ignore-not-found", "--wait=false")
	os.RemoveAll(p.dir)
	return err
}

// getPod returns the Pod of the task's Job, nil when there is none yet.
func getPod(ctx context.Context, p *prepared) (*corev1.Pod, error) {
	out, err := p.kube.run(ctx, nil, "get", "pods", "-l", "batch.kubernetes.io/job-name="+p.rec.Job, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("reading the task's pods: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// waitPod polls the task's Pod until ok says so, the Pod fails, or the
// time is up.
func waitPod(ctx context.Context, p *prepared, ok func(*corev1.Pod) bool, limit time.Duration) (*corev1.Pod, error) {
	end := time.Now().Add(limit)
	for {
		pod, err := getPod(ctx, p)
		if err != nil {
			return nil, err
		}
		if pod != nil && ok(pod) {
			return pod, nil
		}
		if pod != nil && (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) {
			return pod, fmt.Errorf("the task's pod %s ended (%s): %s", pod.Name, pod.Status.Phase, podProblem(pod))
		}
		if time.Now().After(end) {
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

// podProblem says what a Pod waits for or why it failed.
func podProblem(pod *corev1.Pod) string {
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return fmt.Sprintf("container %s: %s %s", cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("container %s exited %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	return fmt.Sprintf("phase %s %s", pod.Status.Phase, pod.Status.Message)
}

func containerStatus(ss []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range ss {
		if ss[i].Name == name {
			return &ss[i]
		}
	}
	return nil
}

func containerRunning(ss []corev1.ContainerStatus, name string) bool {
	s := containerStatus(ss, name)
	return s != nil && s.State.Running != nil
}

// agentStarted: the agent container runs or has run.
func agentStarted(pod *corev1.Pod) bool {
	s := containerStatus(pod.Status.ContainerStatuses, "agent")
	return s != nil && (s.State.Running != nil || s.State.Terminated != nil)
}

// agentEnded: the agent container has terminated.
func agentEnded(pod *corev1.Pod) bool {
	s := containerStatus(pod.Status.ContainerStatuses, "agent")
	return s != nil && s.State.Terminated != nil
}

// followKube streams the agent's output until it ends; a canceled ctx
// (Ctrl-C) stops the task. It reports whether it was stopped.
func followKube(ctx context.Context, p *prepared, stdout, stderr io.Writer) bool {
	if _, err := waitPod(ctx, p, agentStarted, 10*time.Minute); err != nil {
		if ctx.Err() != nil {
			stopKubeAgent(ctx, p)
			return true
		}
		fmt.Fprintf(stderr, "agentbox: %s\n", termsafe.Message(err.Error()))
		return false
	}
	logs := p.kube.command(context.WithoutCancel(ctx), "logs", "--follow", p.rec.Pod, "-c", "agent")
	logs.Stdout, logs.Stderr = stdout, stderr
	_ = logs.Start()
	_, err := waitPod(ctx, p, agentEnded, time.Until(p.rec.Deadline)+time.Minute)
	stopped := false
	if err != nil && ctx.Err() != nil {
		stopped = true
		fmt.Fprintf(stderr, "agentbox: stopping task %s\n", p.rec.Name)
		stopKubeAgent(ctx, p)
	}
	if logs.Process != nil {
		wd := time.AfterFunc(2*time.Second, func() { _ = logs.Process.Kill() })
		_ = logs.Wait()
		wd.Stop()
	}
	return stopped
}

// stopKubeAgent ends every process of the agent's uid in the Pod: from the
// agent container, as that uid, TERM and after a second KILL to all it may
// signal (its own processes, whatever container they are in).
func stopKubeAgent(ctx context.Context, p *prepared) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, _ = p.kube.run(ctx, nil, "exec", p.rec.Pod, "-c", "agent", "--", "sh", "-c", "kill -TERM -1; sleep 1; kill -KILL -1")
	_, _ = waitPod(ctx, p, agentEnded, 20*time.Second)
}
