package generator

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/lockfile"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// strictDecode decodes a manifest into out, refusing unknown fields, as
// kubectl --validate=strict does.
func strictDecode(t *testing.T, name string, data []byte, out any) {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s does not decode strictly: %v\n%s", name, err, data)
	}
}

// kubeFiles generates the golden case agent-AGENT with a kubernetes
// section.
func kubeFiles(t *testing.T, agent string) (map[string][]byte, *config.Config) {
	t.Helper()
	dir := filepath.Join(goldenDir, "agent-"+agent)
	yml, err := os.ReadFile(filepath.Join(dir, config.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	lock, _ := os.ReadFile(filepath.Join(dir, lockfile.File))
	yml = append(yml, "\nkubernetes: {namespace: agents, registry: 127.0.0.1:5000/agentbox}\n"...)
	c, err := Compile(dir, CompileOptions{Source: &Source{File: config.ConfigFile, Config: yml, Lock: lock}})
	if err != nil {
		t.Fatal(err)
	}
	return c.Files, c.Config
}

// TestKubernetesManifests: for every agent, the Pod and the Job decode
// strictly into the Kubernetes API types and keep the sandbox's promises:
// the egress a native sidecar with a startup probe and only the
// capabilities it needs, the agent non-root with none, no service-account
// token, the limits of agentbox.yaml, the images of one tag.
func TestKubernetesManifests(t *testing.T) {
	for _, agent := range catalog.AgentNames() {
		t.Run(agent, func(t *testing.T) {
			files, cfg := kubeFiles(t, agent)
			var pod corev1.Pod
			strictDecode(t, KubePodFile, files[KubePodFile], &pod)
			var job batchv1.Job
			strictDecode(t, KubeJobFile, files[KubeJobFile], &job)
			if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 || job.Spec.ActiveDeadlineSeconds == nil ||
				*job.Spec.ActiveDeadlineSeconds != int64(config.DefaultRunTimeout.Seconds())+CollectWindowSeconds ||
				job.Spec.TTLSecondsAfterFinished == nil || *job.Spec.TTLSecondsAfterFinished != 3600 {
				t.Errorf("job spec: backoff %v, deadline %v, ttl %v", job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds, job.Spec.TTLSecondsAfterFinished)
			}
			if job.Namespace != "agents" || pod.Namespace != "agents" {
				t.Errorf("namespaces %q %q", job.Namespace, pod.Namespace)
			}
			checkPodSpec(t, "pod", pod.Spec, files, cfg)
			checkPodSpec(t, "job", job.Spec.Template.Spec, files, cfg)
		})
	}
}

func checkPodSpec(t *testing.T, what string, s corev1.PodSpec, files map[string][]byte, cfg *config.Config) {
	t.Helper()
	tag := ImageTag(files)
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken || s.ShareProcessNamespace == nil || !*s.ShareProcessNamespace ||
		s.HostNetwork || s.HostPID || s.SecurityContext == nil || s.SecurityContext.SeccompProfile == nil ||
		s.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || s.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: pod-level settings: automount %v, share pids %v, host network %v, host pid %v, security %+v, restart %s",
			what, s.AutomountServiceAccountToken, s.ShareProcessNamespace, s.HostNetwork, s.HostPID, s.SecurityContext, s.RestartPolicy)
	}
	if len(s.InitContainers) != 1 || len(s.Containers) != 2 {
		t.Fatalf("%s: %d init containers, %d containers", what, len(s.InitContainers), len(s.Containers))
	}
	eg, agent, collect := s.InitContainers[0], s.Containers[0], s.Containers[1]
	if eg.Name != "egress" || eg.RestartPolicy == nil || *eg.RestartPolicy != corev1.ContainerRestartPolicyAlways ||
		eg.StartupProbe == nil || eg.StartupProbe.Exec == nil || !strings.Contains(strings.Join(eg.StartupProbe.Exec.Command, " "), "until /usr/local/bin/agentbox-egress health >/dev/null") {
		t.Errorf("%s: egress is not a native sidecar with the health probe: %+v", what, eg)
	}
	if sc := eg.SecurityContext; sc == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		len(sc.Capabilities.Add) != 5 || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: egress security context %+v", what, sc)
	}
	for _, c := range []corev1.Container{agent, collect} {
		sc := c.SecurityContext
		if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser == 0 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
			len(sc.Capabilities.Add) != 0 || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.Privileged != nil {
			t.Errorf("%s: container %s security context %+v", what, c.Name, sc)
		}
		if !strings.HasSuffix(c.Image, "-agent:"+tag) {
			t.Errorf("%s: container %s image %s, want tag %s", what, c.Name, c.Image, tag)
		}
	}
	if *collect.SecurityContext.RunAsUser == *agent.SecurityContext.RunAsUser {
		t.Errorf("%s: collect runs as the agent's uid", what)
	}
	// The node's addresses, from the downward API: the egress refuses them
	// (issue 19 part 9) as it refuses its gateways.
	if i := slices.IndexFunc(eg.Env, func(e corev1.EnvVar) bool { return e.Name == "AGENTBOX_HOST_ADDRS" }); i < 0 ||
		eg.Env[i].ValueFrom == nil || eg.Env[i].ValueFrom.FieldRef == nil || eg.Env[i].ValueFrom.FieldRef.FieldPath != "status.hostIPs" {
		t.Errorf("%s: egress does not take AGENTBOX_HOST_ADDRS from the node's addresses (status.hostIPs): %+v", what, eg.Env)
	}
	if eg.Image != "127.0.0.1:5000/agentbox/"+cfg.Name+"-egress:"+tag {
		t.Errorf("%s: egress image %s", what, eg.Image)
	}
	if mem := agent.Resources.Limits.Memory().Value(); mem != cfg.MemoryBytes() {
		t.Errorf("%s: agent memory limit %d, want %d", what, mem, cfg.MemoryBytes())
	}
	if cpu := agent.Resources.Limits.Cpu().MilliValue(); cpu != int64(cfg.CPUs*1000) {
		t.Errorf("%s: agent cpu limit %dm, want %v", what, cpu, cfg.CPUs)
	}
	if (cfg.Agent.StateDir != "") != slices.ContainsFunc(agent.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == cfg.Agent.StateDir }) {
		t.Errorf("%s: the agent's state directory %q: mounts %+v", what, cfg.Agent.StateDir, agent.VolumeMounts)
	}
	for _, m := range collect.VolumeMounts {
		if m.Name == "workspace" && !m.ReadOnly {
			t.Errorf("%s: collect may write the workspace", what)
		}
	}
}

// TestImageTag: the tag follows every build input and nothing else.
func TestImageTag(t *testing.T) {
	files, _ := kubeFiles(t, "none")
	tag := ImageTag(files)
	for _, path := range []string{ComposeFile, KubePodFile, DevcontainerFile} {
		changed := map[string][]byte{}
		for k, v := range files {
			changed[k] = v
		}
		changed[path] = append(changed[path], '\n')
		if ImageTag(changed) != tag {
			t.Errorf("a change of %s changed the tag", path)
		}
	}
	for _, path := range []string{EgressDir + "/rules.nft", AgentDockerfile, WorkspaceScript} {
		changed := map[string][]byte{}
		for k, v := range files {
			changed[k] = v
		}
		changed[path] = append(changed[path], '\n')
		if ImageTag(changed) == tag {
			t.Errorf("a change of %s left the tag", path)
		}
	}
}
