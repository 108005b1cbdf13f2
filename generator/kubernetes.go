package generator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The manifests of the kubernetes section, under KubeDir: the sandbox as a
// Pod, and the Job template of agentbox run --on kubernetes. Both share one
// Pod spec.
const (
	KubeDir     = OutDir + "/kubernetes"
	KubePodFile = KubeDir + "/pod.yaml"
	KubeJobFile = KubeDir + "/job.yaml"
)

// What the Pod's containers agree on.
const (
	// ReceiveEnv names, in the agent container, the git bundle of the
	// project that agentbox run writes; the workspace's entrypoint waits
	// for it (and for the name with ".done" appended), clones it, and runs
	// the command.
	ReceiveEnv    = "AGENTBOX_RECEIVE"
	ReceiveDir    = "/run/agentbox/in"
	ReceiveBundle = ReceiveDir + "/project.bundle"
	// CollectDone is the file that tells the collect container to end.
	CollectDone = "/tmp/collected"
	// CollectWindowSeconds is how much longer than its deadline a task's
	// Job may run: time to collect its branch.
	CollectWindowSeconds = 30
)

// kubeView is what the kubernetes templates see.
type kubeView struct {
	view
	Namespace      string
	EgressImageRef string
	AgentImageRef  string
	KubeMemory     string // the default profile's memory as a Kubernetes quantity
	KubeCPUs       string // the default profile's CPUs
	Profile        string // the default profile, whose firewall egress runs
	ReceiveEnv     string
	ReceiveDir     string
	ReceiveBundle  string
	CollectUID     int
	CollectScript  string
	StartupProbe   string // the health check, waited for
	DeadlineEnv    string
	ActiveDeadline int64 // run.timeout and the collect window, in seconds
	TTLSeconds     int64
	podSpec        string
}

// PodSpec is the shared Pod spec, indented by n spaces.
func (v kubeView) PodSpec(n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(v.podSpec, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

// renderKubernetes adds the manifests to files, which must hold every other
// generated file: the images' tag is a digest of their build inputs.
func renderKubernetes(p *Plan, v view, files map[string][]byte) error {
	k := p.Kubernetes
	if k == nil {
		return nil
	}
	tag := ImageTag(files)
	prof := p.Default()
	kv := kubeView{
		view:           v,
		Namespace:      k.Namespace,
		EgressImageRef: k.Registry + "/" + p.Name + "-egress:" + tag,
		AgentImageRef:  k.Registry + "/" + p.Name + "-agent:" + tag,
		KubeMemory:     kubeQuantity(prof.Memory),
		KubeCPUs:       prof.CPUs,
		Profile:        prof.Name,
		ReceiveEnv:     ReceiveEnv,
		ReceiveDir:     ReceiveDir,
		ReceiveBundle:  ReceiveBundle,
		CollectUID:     config.CollectUID,
		CollectScript:  "until [ -e " + CollectDone + " ]; do sleep 1; done",
		StartupProbe: "i=0; until " + strings.Join(firewall.HealthCommand, " ") + " >/dev/null 2>&1; do i=$((i + 1)); " +
			"[ $i -lt 100 ] || exec " + strings.Join(firewall.HealthCommand, " ") + "; sleep 0.05; done",
		DeadlineEnv:    firewall.DeadlineEnv,
		ActiveDeadline: int64(p.RunTimeout.Seconds()) + CollectWindowSeconds,
		TTLSeconds:     int64(k.TTLAfterFinished.Seconds()),
	}
	var spec bytes.Buffer
	if err := tmpl.ExecuteTemplate(&spec, "kubernetes-podspec.yaml.tmpl", kv); err != nil {
		return fmt.Errorf("rendering the Pod spec: %w", err)
	}
	kv.podSpec = spec.String()
	for path, name := range map[string]string{KubePodFile: "kubernetes-pod.yaml.tmpl", KubeJobFile: "kubernetes-job.yaml.tmpl"} {
		var b bytes.Buffer
		if err := tmpl.ExecuteTemplate(&b, name, kv); err != nil {
			return fmt.Errorf("rendering %s: %w", path, err)
		}
		files[path] = b.Bytes()
	}
	return nil
}

// ImageTag is the tag of the two images on a cluster: a digest of the
// generated files they are built from (everything under .agentbox/ but the
// compose file and the manifests), so that a change of the policy, the
// pins or the Dockerfiles is a new tag in the manifests' diff.
func ImageTag(files map[string][]byte) string {
	var paths []string
	for path := range files {
		if strings.HasPrefix(path, OutDir+"/") && path != ComposeFile && !strings.HasPrefix(path, KubeDir+"/") {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, path := range paths {
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(files[path]))
		h.Write(files[path])
	}
	return "in-" + hex.EncodeToString(h.Sum(nil))[:20]
}

// kubeQuantity writes a memory size of agentbox.yaml (512m, 4g: binary
// units, as Docker reads them) as a Kubernetes quantity (512Mi, 4Gi).
func kubeQuantity(m string) string {
	if m == "" {
		return m
	}
	unit := map[byte]string{'k': "Ki", 'm': "Mi", 'g': "Gi"}[m[len(m)-1]]
	return m[:len(m)-1] + unit
}

// KubeTask is what a task's Job takes besides its Task.
type KubeTask struct {
	Job     string            // the Job's name
	Digests map[string]string // each image of the template -> image@digest
	Secret  string            // the Secret of run.env; "" for none
	Keys    string            // the Secret of the keys the gateway holds (KubeKeyNames); "" for none
	CodeMap string            // the ConfigMap of the task's clone; "" when kubectl exec delivers it
}

// jobTemplate is the Job template among files (Compile's, in memory).
func jobTemplate(files map[string][]byte) (*batchv1.Job, error) {
	data, ok := files[KubeJobFile]
	if !ok {
		return nil, fmt.Errorf("%s: not generated (agentbox.yaml has no kubernetes section)", KubeJobFile)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		return nil, fmt.Errorf("reading %s: %w", KubeJobFile, err)
	}
	return &job, nil
}

// JobImages are the images of the Job template among files (Compile's),
// each once.
func JobImages(files map[string][]byte) ([]string, error) {
	job, err := jobTemplate(files)
	if err != nil {
		return nil, err
	}
	var out []string
	spec := job.Spec.Template.Spec
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		if !slices.Contains(out, c.Image) {
			out = append(out, c.Image)
		}
	}
	return out, nil
}

// TaskJob is the Job of task t of cfg's sandbox: the Job template among
// files (Compile's, in memory) with the facts of t that TaskOverride gives
// a local task (its name and labels, the deadline egress keeps, the
// command with every $ kept literal), the images by digest, the Job's own
// deadline (later by the collect window), run.env from a Secret and the
// clone from a ConfigMap.
func TaskJob(cfg *config.Config, files map[string][]byte, t Task, k KubeTask) (*batchv1.Job, error) {
	job, err := jobTemplate(files)
	if err != nil {
		return nil, err
	}
	job.Name = k.Job
	for key, v := range taskLabels(cfg, t) {
		job.Labels[key] = v
		job.Spec.Template.Labels[key] = v
	}
	active := int64(time.Until(t.Deadline).Seconds()) + 1 + CollectWindowSeconds
	job.Spec.ActiveDeadlineSeconds = &active
	spec := &job.Spec.Template.Spec
	if err := pinJobImages(spec, k.Digests); err != nil {
		return nil, err
	}
	for i := range spec.InitContainers {
		if c := &spec.InitContainers[i]; c.Name == "egress" {
			for _, kv := range taskEgressEnv(cfg, t) {
				c.Env = append(c.Env, corev1.EnvVar{Name: kv[0], Value: kv[1]})
			}
			// Egress stays after the deadline, for the collect container.
			c.Env = append(c.Env, corev1.EnvVar{Name: firewall.DeadlineStayEnv, Value: "1"})
		}
	}
	if k.CodeMap != "" {
		// The clone comes in a ConfigMap: no kubectl exec to wait for.
		for i := range spec.Volumes {
			if v := &spec.Volumes[i]; v.Name == "incoming" {
				v.VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: k.CodeMap}}}
			}
		}
	}
	for i := range spec.Containers {
		if c := &spec.Containers[i]; c.Name == "agent" {
			// Kubernetes expands $(VAR) in args; $$ is a literal $.
			c.Args = dollarsDoubled(t.Command)
			if k.Secret != "" {
				c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: k.Secret}}})
			}
		}
	}
	held, _ := HeldKeys(cfg, defaultPolicy(cfg))
	if k.Keys != "" {
		kubeKeys(spec, held, k.Keys)
	}
	kubeForges(spec, ProfileForges(cfg, defaultPolicy(cfg)), len(held) > 0)
	return job, nil
}

// pinJobImages replaces each container's image with its digest's.
func pinJobImages(spec *corev1.PodSpec, digests map[string]string) error {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			ref, ok := digests[cs[i].Image]
			if !ok {
				return fmt.Errorf("%s: container %s has image %s, which was not resolved", KubeJobFile, cs[i].Name, cs[i].Image)
			}
			cs[i].Image = ref
		}
	}
	return nil
}
