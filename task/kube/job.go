// Package kube is the Kubernetes backend of a task (agentbox run --on
// kubernetes): a task as a Job made from the generated
// template (.agentbox/kubernetes/job.yaml). The Job's Pod is the sandbox:
// egress as a native sidecar keeps the deadline, the agent container's
// entrypoint clones the task's clone from a git bundle (in a ConfigMap, or
// written with kubectl exec) and runs the command, and the collect container (another uid, the workspace
// read-only) hands the task's branch back as a bundle, which the host takes
// through agentbox fetch's checks, as for a local task. kubectl runs
// through a sandbox.Runner, so that tests fake it.
package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// Kubectl is kubectl at Path on one context ("": kubectl's current one)
// and namespace, run by Runner (nil: sandbox.Exec).
type Kubectl struct {
	Path      string
	Context   string
	Namespace string
	Runner    sandbox.Runner
}

func (k Kubectl) runner() sandbox.Runner {
	if k.Runner == nil {
		return sandbox.Exec{}
	}
	return k.Runner
}

// argv is kubectl on the context and namespace with args.
func (k Kubectl) argv(args ...string) []string {
	a := []string{k.Path}
	if k.Context != "" {
		a = append(a, "--context", k.Context)
	}
	return append(append(a, "--namespace", k.Namespace), args...)
}

// Stream runs kubectl with args, its output to stdout and stderr.
func (k Kubectl) Stream(ctx context.Context, stdout, stderr io.Writer, args ...string) error {
	return k.runner().Run(ctx, sandbox.Cmd{Args: k.argv(args...), Stdout: stdout, Stderr: stderr})
}

// run runs kubectl with stdin and returns its stdout; an error carries the
// first line of its stderr.
func (k Kubectl) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	var out bytes.Buffer
	var errb iolimit.Head
	err := k.runner().Run(ctx, sandbox.Cmd{Args: k.argv(args...), Stdin: stdin, Stdout: &out, Stderr: &errb})
	if err != nil {
		return out.Bytes(), fmt.Errorf("kubectl %s: %s", args[0], sandbox.FirstLine(errb.Bytes(), err))
	}
	return out.Bytes(), nil
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

// start creates the task's Job (and the Secret of run.env), and
// delivers the task's clone to its agent container.
func (b *Backend) start(ctx context.Context) error {
	codeMap, err := b.createJob(ctx)
	if err != nil {
		return b.fail(ctx, err)
	}
	// With the clone in a ConfigMap the agent need only have started; else
	// it must run to be handed the clone. A Pod that cannot start fails the
	// run here, its Job removed.
	ready := func(s *corev1.Pod) bool { return containerRunning(s.Status.ContainerStatuses, "agent") }
	if codeMap != "" {
		ready = agentStarted
	}
	pod, err := b.waitPod(ctx, ready, 10*time.Minute)
	if err != nil {
		return b.fail(ctx, err)
	}
	b.P.Rec.Pod = pod.Name
	if err := b.P.Rec.Write(b.P.Cfg.Name); err != nil {
		return b.fail(ctx, err)
	}
	if codeMap == "" {
		if err := b.deliverBundle(ctx, pod.Name); err != nil {
			return b.fail(ctx, err)
		}
	}
	fmt.Fprintf(b.Stderr, "agentbox: task %s runs as Job %s (pod %s, namespace %s)\n", b.P.Rec.Name, b.P.Rec.Job, pod.Name, b.K.Namespace)
	return nil
}

// createJob creates the task's Job, the Secret of run.env and, for a
// small clone, the ConfigMap that carries it (codeMap, owned by the Job).
func (b *Backend) createJob(ctx context.Context) (codeMap string, err error) {
	digests, err := kubeDigests(ctx, b.P.Files)
	if err != nil {
		return "", err
	}
	// The model keys the gateway holds go in a Secret of their own, which
	// only the egress container mounts (generator.KubeTask.Keys).
	held := generator.KubeKeyNames(b.P.Cfg)
	envNames := slices.DeleteFunc(b.P.Cfg.TaskEnv(), func(n string) bool { return slices.Contains(held, n) })
	secret, keys := "", ""
	if len(envNames) > 0 {
		secret = b.P.Rec.Job + "-env"
	}
	if len(held) > 0 {
		keys = b.P.Rec.Job + "-keys"
	}
	bundlePath := filepath.Join(b.P.Dir, "task.bundle")
	if fi, err := os.Stat(bundlePath); err == nil && fi.Size() <= maxInlineBundle {
		codeMap = b.P.Rec.Job + "-code"
		if err := b.createCodeMap(ctx, codeMap, bundlePath); err != nil {
			return "", err
		}
	}
	job, err := generator.TaskJob(b.P.Cfg, b.P.Files, b.P.Task(), generator.KubeTask{Job: b.P.Rec.Job, Digests: digests, Secret: secret, Keys: keys, CodeMap: codeMap})
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(job)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(b.P.Dir, "job.json"), data, 0o600); err != nil {
		return "", err
	}
	uid, err := b.K.run(ctx, bytes.NewReader(data), "create", "-f", "-", "-o", "jsonpath={.metadata.uid}")
	if err != nil {
		return "", fmt.Errorf("creating the task's Job: %w", err)
	}
	for _, sec := range []struct {
		name  string
		names []string
	}{{secret, envNames}, {keys, held}} {
		if sec.name == "" {
			continue
		}
		if err := b.createEnvSecret(ctx, sec.name, string(uid), sec.names); err != nil {
			return "", err
		}
	}
	if codeMap != "" {
		owner := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":%q,"uid":%q}]}}`, b.P.Rec.Job, uid)
		if _, err := b.K.run(ctx, nil, "patch", "configmap", codeMap, "--type=merge", "-p", owner); err != nil {
			return "", fmt.Errorf("making the Job own the clone's ConfigMap: %w", err)
		}
	}
	return codeMap, nil
}

// deliverBundle writes the task's clone (a bundle) into the running agent
// container of pod, where its entrypoint waits for it.
func (b *Backend) deliverBundle(ctx context.Context, pod string) error {
	bundle, err := os.Open(filepath.Join(b.P.Dir, "task.bundle"))
	if err != nil {
		return err
	}
	defer bundle.Close()
	script := `cat > "$0.tmp" && mv "$0.tmp" "$0" && : > "$0.done"`
	if _, err := b.K.run(ctx, bundle, "exec", "-i", pod, "-c", "agent", "--", "sh", "-c", script, generator.ReceiveBundle); err != nil {
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
func (b *Backend) createCodeMap(ctx context.Context, name, bundlePath string) error {
	data, err := os.ReadFile(bundlePath)
	if err != nil {
		return err
	}
	base := filepath.Base(generator.ReceiveBundle)
	cm := corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{generator.TaskLabel: b.P.Rec.Name}},
		BinaryData: map[string][]byte{base: data},
		Data:       map[string]string{base + ".done": ""},
	}
	j, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	if _, err := b.K.run(ctx, bytes.NewReader(j), "create", "-f", "-"); err != nil {
		return fmt.Errorf("creating the ConfigMap of the task's clone: %w", err)
	}
	return nil
}

// createEnvSecret makes the Secret that holds the values of names (of
// secrets and run.env, from the environment or the secrets file), owned by
// the Job (so it goes with it).
func (b *Backend) createEnvSecret(ctx context.Context, name, jobUID string, names []string) error {
	s := corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{generator.TaskLabel: b.P.Rec.Name}},
		StringData: map[string]string{},
	}
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: b.P.Rec.Job, UID: types.UID(jobUID)}}
	env, err := sandbox.Environ("up") // the environment, and the secrets file
	if err != nil {
		return err
	}
	for _, n := range names {
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
	if _, err := b.K.run(ctx, bytes.NewReader(data), "create", "-f", "-"); err != nil {
		return fmt.Errorf("creating the Secret of run.env: %w", err)
	}
	return nil
}

// fail removes what start made and the task's directory.
func (b *Backend) fail(ctx context.Context, err error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_, _ = b.K.run(ctx, nil, "delete", "job", b.P.Rec.Job, "--ignore-not-found", "--wait=false", "--cascade=background")
	_, _ = b.K.run(ctx, nil, "delete", "configmap", b.P.Rec.Job+"-code", "--ignore-not-found", "--wait=false")
	os.RemoveAll(b.P.Dir)
	return err
}

// getPod returns the Pod of the task's Job, nil when there is none yet.
func (b *Backend) getPod(ctx context.Context) (*corev1.Pod, error) {
	out, err := b.K.run(ctx, nil, "get", "pods", "-l", "batch.kubernetes.io/job-name="+b.P.Rec.Job, "-o", "json")
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

// follow streams the agent's output until it ends; a canceled ctx
// (Ctrl-C) stops the task. It reports whether it was stopped.
func (b *Backend) follow(ctx context.Context, stdout, stderr io.Writer) bool {
	if _, err := b.waitPod(ctx, agentStarted, 10*time.Minute); err != nil {
		if ctx.Err() != nil {
			b.stopAgent(ctx)
			return true
		}
		fmt.Fprintf(stderr, "agentbox: %s\n", termsafe.Message(err.Error()))
		return false
	}
	lctx, stopLogs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLogs()
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		_ = b.K.Stream(lctx, stdout, stderr, "logs", "--follow", b.P.Rec.Pod, "-c", "agent")
	}()
	_, err := b.waitPod(ctx, agentEnded, time.Until(b.P.Rec.Deadline)+time.Minute)
	stopped := false
	if err != nil && ctx.Err() != nil {
		stopped = true
		fmt.Fprintf(stderr, "agentbox: stopping task %s\n", b.P.Rec.Name)
		b.stopAgent(ctx)
	}
	// kubectl logs ends with the container; it has 2 s to deliver the rest.
	wd := time.AfterFunc(2*time.Second, stopLogs)
	<-logsDone
	wd.Stop()
	return stopped
}

// stopAgent ends every process of the agent's uid in the Pod: from the
// agent container, as that uid, TERM and after a second KILL to all it may
// signal (its own processes, whatever container they are in).
func (b *Backend) stopAgent(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, _ = b.K.run(ctx, nil, "exec", b.P.Rec.Pod, "-c", "agent", "--", "sh", "-c", "kill -TERM -1; sleep 1; kill -KILL -1")
	_, _ = b.waitPod(ctx, agentEnded, 20*time.Second)
}
