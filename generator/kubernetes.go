package generator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
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
	var prof ProfilePlan
	for _, pp := range p.Profiles {
		if pp.Name == p.DefaultProfile {
			prof = pp
		}
	}
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
