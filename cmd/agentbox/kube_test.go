package main

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
)

// TestKubeJob: the task's Job is the generated template (in memory, as
// compiled: nothing is read back from disk) with the task's
// name and labels, the images by digest, egress keeping the deadline (and
// staying after it), the Job's own deadline later by the collect window,
// the command with every $ kept literal, and run.env from a Secret.
func TestKubeJob(t *testing.T) {
	dir := project(t, "full")
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute).Truncate(time.Second)
	tk := generator.Task{Name: "fix-1", Deadline: deadline, Command: []string{"bash", "-c", "echo $(HOME) $HOME"}}
	tag := generator.ImageTag(c.Files)
	reg := "registry.acme.test:5000/sandboxes/acme-api-"
	digests := map[string]string{reg + "egress:" + tag: reg + "egress:" + tag + "@sha256:e", reg + "agent:" + tag: reg + "agent:" + tag + "@sha256:a"}
	if imgs, err := generator.JobImages(c.Files); err != nil || !slices.Equal(slices.Sorted(slices.Values(imgs)), slices.Sorted(maps.Keys(digests))) {
		t.Errorf("JobImages = %q, %v; want the egress and agent images", imgs, err)
	}
	job, err := generator.TaskJob(c.Config, c.Files, tk, generator.KubeTask{Job: "acme-api-task-fix-1", Digests: digests,
		Secret: "acme-api-task-fix-1-env", CodeMap: "acme-api-task-fix-1-code"})
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "acme-api-task-fix-1" || job.Labels[generator.TaskLabel] != "fix-1" || job.Spec.Template.Labels[generator.TaskLabel] != "fix-1" {
		t.Errorf("name %s, labels %v, pod labels %v", job.Name, job.Labels, job.Spec.Template.Labels)
	}
	if a := *job.Spec.ActiveDeadlineSeconds; a < 600+generator.CollectWindowSeconds-2 || a > 601+generator.CollectWindowSeconds {
		t.Errorf("activeDeadlineSeconds %d", a)
	}
	spec := job.Spec.Template.Spec
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		if !strings.Contains(c.Image, "@sha256:") {
			t.Errorf("container %s: image %s is not by digest", c.Name, c.Image)
		}
	}
	env := map[string]string{}
	for _, e := range spec.InitContainers[0].Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env[firewall.HostAddrsEnv] != "status.hostIPs" {
		t.Errorf("egress env %v: the node's addresses (status.hostIPs) are not in %s", env, firewall.HostAddrsEnv)
	}
	if env[firewall.DeadlineEnv] != deadlineString(deadline) || env[firewall.DeadlineStayEnv] != "1" || env[firewall.AgentUIDEnv] != "1000" {
		t.Errorf("egress env %v", env)
	}
	agent := spec.Containers[0]
	if agent.Name != "agent" || !slices.Equal(agent.Args, []string{"bash", "-c", "echo $$(HOME) $$HOME"}) {
		t.Errorf("agent %s args %q", agent.Name, agent.Args)
	}
	if len(agent.EnvFrom) != 1 || agent.EnvFrom[0].SecretRef == nil || agent.EnvFrom[0].SecretRef.Name != "acme-api-task-fix-1-env" {
		t.Errorf("agent envFrom %+v", agent.EnvFrom)
	}
	incoming := false
	for _, v := range spec.Volumes {
		if v.Name == "incoming" {
			incoming = v.ConfigMap != nil && v.ConfigMap.Name == "acme-api-task-fix-1-code"
		}
	}
	if !incoming {
		t.Errorf("the clone's volume is not the task's ConfigMap: %+v", spec.Volumes)
	}
	if _, err := generator.TaskJob(c.Config, c.Files, tk, generator.KubeTask{Job: "acme-api-task-fix-1", Digests: map[string]string{}}); err == nil {
		t.Error("an unresolved image was accepted")
	}
}

func deadlineString(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
