//go:build k8s

// Package k8stest proves the repository's test cluster (scripts/k8s): its
// test, under the build tag k8s and as root, starts a real single-node
// Kubernetes with cluster.sh, runs Jobs shaped like agentbox's sandbox on it,
// and checks that cluster.sh down leaves the machine as it found it. Without
// root or a tool it skips, except under CI=true, where it fails.
//
//	go test -tags k8s -count=1 -timeout 30m -v ./internal/k8stest/
package k8stest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	baseImage = "agentbox-e2e/debian:bookworm" // scripts/e2e/base-image.sh
	// importedImage is baseImage as `docker save | ctr images import` names it.
	importedImage = "docker.io/" + baseImage
)

// TestCluster starts the cluster, runs agentbox-shaped Jobs on it from an
// imported image and from a registry on 127.0.0.1, checks server-side
// strict validation, then stops it and checks the machine is clean.
func TestCluster(t *testing.T) {
	requirements(t)
	c := newCluster(t)
	before := snapshot(t, c)
	t0 := time.Now()
	c.sh(25*time.Minute, "up")
	t.Logf("k8s timing: cluster.sh up           %6.1f s", time.Since(t0).Seconds())
	t.Cleanup(func() { c.downAndCheck(before) })
	t0 = time.Now()
	c.sh(time.Minute, "up")
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("cluster.sh up on a running cluster took %s", took)
	}
	t.Logf("k8s timing: cluster.sh up (running) %6.1f s", time.Since(t0).Seconds())

	id := runID(t)
	ns := "k8stest-" + id
	c.mustKubectl("create", "namespace", ns)
	t0 = time.Now()
	c.sh(5*time.Minute, "import-image", baseImage)
	t.Logf("k8s timing: import-image            %6.1f s", time.Since(t0).Seconds())
	reg := startRegistry(t, c.root)
	pushed := reg + "/agentbox-k8stest/debian:" + id
	if _, err := run(5*time.Minute, "", "docker", "tag", baseImage, pushed); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = run(time.Minute, "", "docker", "rmi", pushed) })
	if _, err := run(5*time.Minute, "", "docker", "push", pushed); err != nil {
		t.Fatal(err)
	}

	c.applyJob(job{Name: "sandbox", Namespace: ns, Image: importedImage, PullPolicy: "Never", Deadline: 300, AgentTail: "exit 0"})
	c.applyJob(job{Name: "pulled", Namespace: ns, Image: pushed, PullPolicy: "Always", Deadline: 300, AgentTail: "exit 0"})
	c.applyJob(job{Name: "deadline", Namespace: ns, Image: importedImage, PullPolicy: "Never", Deadline: 5, AgentTail: "exec sleep 300"})

	t.Run("sandbox", func(t *testing.T) { checkSandbox(t, c, ns) })
	t.Run("registry", func(t *testing.T) { checkPulled(t, c, ns, pushed) })
	t.Run("deadline", func(t *testing.T) { checkDeadline(t, c, ns) })
	t.Run("strict validation", func(t *testing.T) { checkStrict(t, c, ns) })
	t.Run("trust-registry", func(t *testing.T) { checkTrusted(t, c, ns, reg, id) })
	t.Run("no image collection", func(t *testing.T) { checkNoImageGC(t, c) })
}

// checkNoImageGC: the kubelet, as it runs (its configz), never collects
// images. With its default (above 85 % of the disk) it deleted the pause
// image on a CI machine whose disk the e2e's Docker images had filled, and
// no pod of the e2e started again: the sandbox image cannot be pulled here.
func checkNoImageGC(t *testing.T, c *cluster) {
	out := c.mustKubectl("get", "--raw", "/api/v1/nodes/agentbox-k8s/proxy/configz")
	var cz struct {
		Config struct {
			High *int `json:"imageGCHighThresholdPercent"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal([]byte(out), &cz); err != nil || cz.Config.High == nil {
		t.Fatalf("the kubelet's configz: %v\n%s", err, tail(out, 20))
	}
	if *cz.Config.High != 100 {
		t.Errorf("the kubelet collects images above %d %% of the disk; it must never (100)", *cz.Config.High)
	}
}

// waitJob waits for a Job condition; on timeout it fails with what the
// cluster says about the Job and its pods.
func waitJob(t *testing.T, c *cluster, ns, name, cond string) {
	t.Helper()
	if _, err := c.kubectl("-n", ns, "wait", "--for=condition="+cond, "job/"+name, "--timeout=240s"); err != nil {
		desc, _ := c.kubectl("-n", ns, "describe", "job,pods", "-l", "job-name="+name)
		jd, _ := c.kubectl("-n", ns, "describe", "job", name)
		t.Fatalf("job %s not %s: %v\n%s\n%s\n(logs in %s/logs)", name, cond, err, jd, desc, c.env["STATE"])
	}
}

func checkSandbox(t *testing.T, c *cluster, ns string) {
	waitJob(t, c, ns, "sandbox", "complete")
	egress := c.mustKubectl("-n", ns, "logs", "job/sandbox", "-c", "egress")
	agent := c.mustKubectl("-n", ns, "logs", "job/sandbox", "-c", "agent")
	t.Logf("egress:\n%s\nagent:\n%s", egress, agent)
	en, an := field(egress, "egress-netns="), field(agent, "agent-netns=")
	if en == "" || en != an {
		t.Errorf("egress netns %q, agent netns %q: want the same", en, an)
	}
	for _, w := range []struct{ log, key, want string }{
		{egress, "CapEff:", "0000000000001000"}, // cap_net_admin only
		{agent, "CapEff:", "0000000000000000"},
		{agent, "uid=", "1000"},
		{agent, "sees-egress=", "yes"}, // shareProcessNamespace
	} {
		if got := field(w.log, w.key); got != w.want {
			t.Errorf("%s %q, want %q", w.key, got, w.want)
		}
	}
	egressStart, agentStart := startTimes(t, c, ns, "sandbox")
	// The egress sleeps 2 s before its startupProbe can pass.
	if d := agentStart.Sub(egressStart); d < 2*time.Second {
		t.Errorf("the agent started %s after the egress: before its startupProbe passed", d)
	}
}

func checkPulled(t *testing.T, c *cluster, ns, image string) {
	waitJob(t, c, ns, "pulled", "complete")
	// imagePullPolicy Always: the kubelet pulled (containerd resolved the
	// tag at the registry) even if containerd had the layers.
	out := c.mustKubectl("-n", ns, "get", "events", "--field-selector", "reason=Pulled",
		"-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
	if want := "Successfully pulled image \"" + image + "\""; !strings.Contains(out, want) {
		t.Errorf("no event %q in:\n%s", want, out)
	}
}

func checkDeadline(t *testing.T, c *cluster, ns string) {
	waitJob(t, c, ns, "deadline", "failed")
	reason := c.mustKubectl("-n", ns, "get", "job", "deadline",
		"-o", `jsonpath={.status.conditions[?(@.type=="Failed")].reason}`)
	if reason != "DeadlineExceeded" {
		t.Errorf("job deadline failed with reason %q, want DeadlineExceeded", reason)
	}
}

// checkTrusted pulls from the registry under the machine's host name, which
// containerd, unlike 127.0.0.1, does not take for a local host: the pull
// fails over HTTPS until trust-registry writes the host's hosts.toml, which
// containerd reads at the next pull, without a restart.
func checkTrusted(t *testing.T, c *cluster, ns, reg, id string) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 || !allLoopback(addrs) {
		t.Skipf("the host name %q does not resolve to loopback addresses only (%v, %v)", host, addrs, err)
	}
	_, port, _ := net.SplitHostPort(reg)
	named := net.JoinHostPort(host, port)
	image := named + "/agentbox-k8stest/debian:" + id
	c.mustKubectl("-n", ns, "run", "untrusted", "--image="+image, "--restart=Never", "--command", "--", "true")
	const refused = "http: server gave HTTP response to HTTPS client"
	var msg string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		msg, _ = c.kubectl("-n", ns, "get", "pod", "untrusted", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.message}")
		if strings.Contains(msg, refused) {
			break
		}
	}
	if !strings.Contains(msg, refused) {
		t.Fatalf("before trust-registry, the pull of %s: %q, want a failure with %q", image, msg, refused)
	}
	c.sh(time.Minute, "trust-registry", named)
	c.mustKubectl("-n", ns, "run", "trusted", "--image="+image, "--restart=Never", "--command", "--", "true")
	if _, err := c.kubectl("-n", ns, "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/trusted", "--timeout=180s"); err != nil {
		desc, _ := c.kubectl("-n", ns, "describe", "pod", "trusted")
		t.Fatalf("after trust-registry %s: %v\n%s", named, err, desc)
	}
}

func allLoopback(addrs []string) bool {
	return !slices.ContainsFunc(addrs, func(a string) bool {
		ip := net.ParseIP(a)
		return ip == nil || !ip.IsLoopback()
	})
}

// checkStrict applies the sandbox Job with --dry-run=server
// --validate=strict: as written it passes; with an unknown field it fails.
func checkStrict(t *testing.T, c *cluster, ns string) {
	good := renderJob(t, job{Name: "dry-run", Namespace: ns, Image: importedImage, PullPolicy: "Never", Deadline: 60, AgentTail: "exit 0"})
	const agent = "      - name: agent\n"
	if !strings.Contains(string(good), agent) {
		t.Fatalf("the template has no %q", agent)
	}
	bad := strings.Replace(string(good), agent, agent+"        bogusField: true\n", 1)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, manifest, wantErr string
	}{
		{"valid", string(good), ""},
		{"unknown field", bad, `unknown field "spec.template.spec.containers[0].bogusField"`},
	} {
		f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
		if err := os.WriteFile(f, []byte(tc.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := c.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", f)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.wantErr)
		}
	}
}

// field returns what follows key on the first line that starts with it.
func field(log, key string) string {
	for _, l := range strings.Split(log, "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// startTimes returns when the Job's pod started its egress and its agent.
func startTimes(t *testing.T, c *cluster, ns, name string) (egress, agent time.Time) {
	t.Helper()
	type status struct {
		Name  string `json:"name"`
		State map[string]struct {
			StartedAt time.Time `json:"startedAt"`
		} `json:"state"`
	}
	var pods struct {
		Items []struct {
			Status struct {
				Init []status `json:"initContainerStatuses"`
				Main []status `json:"containerStatuses"`
			} `json:"status"`
		} `json:"items"`
	}
	out := c.mustKubectl("-n", ns, "get", "pods", "-l", "job-name="+name, "-o", "json")
	if err := json.Unmarshal([]byte(out), &pods); err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of job %s: %v\n%s", name, err, out)
	}
	started := func(ss []status, want string) time.Time {
		for _, s := range ss {
			if s.Name == want {
				for _, st := range s.State {
					return st.StartedAt
				}
			}
		}
		t.Fatalf("no start time for container %s in\n%s", want, out)
		return time.Time{}
	}
	st := pods.Items[0].Status
	return started(st.Init, "egress"), started(st.Main, "agent")
}

func runID(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

var kubeChain = regexp.MustCompile(`KUBE-[A-Z0-9-]+`)
