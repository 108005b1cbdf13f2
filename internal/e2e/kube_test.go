//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The cluster of scripts/k8s/cluster.sh: its CNI bridge's gateway is the
// host's address on the pod network, where the test runs its own hosts.
const (
	kubeGateway  = "10.244.77.1"
	kubeBridge   = "agentbox-k8s0" // scripts/k8s/cluster.sh's default
	kubeAllowed  = 18080           // network.cidrs lists kubeGateway on this port
	kubeRefused  = 18081           // and not on this one
	kubeTaskPort = 7000            // each parallel task listens here
)

// kubeListener accepts connections on addr, greets each with its name and
// counts them.
type kubeListener struct {
	mu sync.Mutex
	n  int
}

func listenKube(e *env, port int, greeting string) *kubeListener {
	l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", kubeGateway, port))
	if err != nil {
		e.t.Fatalf("listening on the cluster's bridge: %v", err)
	}
	e.t.Cleanup(func() { l.Close() })
	kl := &kubeListener{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			kl.mu.Lock()
			kl.n++
			kl.mu.Unlock()
			fmt.Fprintln(c, greeting)
			c.Close()
		}
	}()
	return kl
}

func (k *kubeListener) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

// requireCluster returns the kubeconfig of the running test cluster. Under
// CI=true a missing cluster fails the test (.ci/run starts it).
func requireCluster(e *env) string {
	r := e.run(runOpt{dir: e.root}, "bash", "scripts/k8s/cluster.sh", "status")
	if r.failed() || !strings.Contains(r.stdout+r.stderr, "Ready") {
		if os.Getenv("CI") == "true" {
			e.t.Fatalf("the test cluster is not running (make k8s-setup): %s", r)
		}
		e.t.Skipf("the test cluster is not running; start it with make k8s-setup: %s", r)
	}
	// The CNI plugin makes the bridge with the first pod; the test's hosts
	// listen on its gateway address before that.
	if e.run(runOpt{}, "ip", "addr", "show", "dev", kubeBridge).failed() {
		e.must(runOpt{}, "ip", "link", "add", kubeBridge, "type", "bridge")
		e.must(runOpt{}, "ip", "addr", "add", kubeGateway+"/24", "dev", kubeBridge)
		e.must(runOpt{}, "ip", "link", "set", kubeBridge, "up")
	}
	kubeconfig := strings.TrimSpace(e.must(runOpt{dir: e.root}, "bash", "scripts/k8s/cluster.sh", "kubeconfig").stdout)
	e.t.Cleanup(func() {
		if e.t.Failed() {
			kubeDiagnose(e, kubeconfig)
		}
	})
	return kubeconfig
}

// kubeDiagnose logs what the cluster says after a test of it failed: its
// pods and events, the node, and the tails of the kubelet's and
// containerd's logs. CI shows what a failing test said and no more; a
// cluster that could not start a pod once told nothing of why.
func kubeDiagnose(e *env, kubeconfig string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	show := func(name string, args ...string) {
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		e.t.Logf("the cluster after the failure: %s %s (%v):\n%s", name, strings.Join(args, " "), err, tail(string(out), 25))
	}
	k := func(args ...string) { show("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...) }
	k("get", "pods", "--all-namespaces", "-o", "wide")
	k("get", "events", "--all-namespaces", "--sort-by=.lastTimestamp")
	k("get", "node", "-o", `jsonpath={range .items[*].status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}`)
	out, _ := exec.CommandContext(ctx, "bash", filepath.Join(e.root, "scripts/k8s/cluster.sh"), "env").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if state, ok := strings.CutPrefix(l, "STATE="); ok {
			show("grep", "-E", "^[EW][0-9]{4}", filepath.Join(state, "logs", "kubelet.log"))
			show("grep", "-E", "level=(error|warning)", filepath.Join(state, "logs", "containerd.log"))
		}
	}
}

// testKubernetes: agentbox run --on kubernetes runs tasks as Jobs on a real
// single-node cluster, with the sandbox's firewall in the Pod.
func testKubernetes(e *env) {
	t := e.t
	kubeconfig := requireCluster(e)
	e.must(runOpt{dir: e.root}, "bash", "scripts/k8s/cluster.sh", "trust-registry", e.registry)
	p := e.newProject("kube", "none")
	cfgPath := filepath.Join(p.dir, "agentbox.yaml")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(data), "network:\n", fmt.Sprintf("network:\n  cidrs:\n    - cidr: %s/32\n      ports: [%d]\n", kubeGateway, kubeAllowed), 1)
	cfg += fmt.Sprintf("run:\n  timeout: 5m\nkubernetes:\n  namespace: default\n  registry: %s/agentbox-e2e\n", e.registry)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	bump(e, p, nil)
	e.trackImages(p.name)
	r := p.mustAgentbox(nil, "build", "--push")
	e.timed("agentbox build --push (kube)", r.took)
	env := []string{"XDG_STATE_HOME=" + filepath.Join(e.work, "kube-state"), "KUBECONFIG=" + kubeconfig}
	defer func() {
		p.agentbox(env, "gc")
		e.trackImages(p.name)
	}()
	// The generated manifests, checked by the cluster's own API server.
	for _, f := range []string{".agentbox/kubernetes/pod.yaml", ".agentbox/kubernetes/job.yaml"} {
		e.must(runOpt{dir: p.dir, env: env}, "kubectl", "apply", "--dry-run=server", "--validate=strict", "-f", f)
	}

	allowed := listenKube(e, kubeAllowed, "allowed host")
	refused := listenKube(e, kubeRefused, "refused host")
	script := fmt.Sprintf(`set -u; cd %s
git -c user.name=task -c user.email=task@agentbox.invalid commit -q --allow-empty -m "a task on the cluster"
echo made on the cluster > kube.txt; git add kube.txt
git -c user.name=task -c user.email=task@agentbox.invalid commit -q -m "add kube.txt"
timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d; cat <&3' || echo "NOT REACHED: the allowed host"
timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d; cat <&3' 2>/dev/null && echo "LEAK: reached the refused host"
getent hosts %s && echo "LEAK: an unlisted name resolved"
echo "cluster task done"`, "/workspace", kubeGateway, kubeAllowed, kubeGateway, kubeRefused, unlistedName)
	r = p.agentbox(env, "run", "--on", "kubernetes", "--name", "kcommit", "--json", "--", "bash", "-c", script)
	e.timed("agentbox run --on kubernetes (a task that commits)", r.took)
	var sum struct {
		runSummary
		RefusedAddresses []struct {
			Address string `json:"address"`
			Port    int    `json:"port"`
			Why     string `json:"why"`
		} `json:"refused_addresses"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run --on kubernetes: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, r.stderr)
	}
	if strings.Contains(r.stderr, "LEAK") || strings.Contains(r.stderr, "NOT REACHED") || !strings.Contains(r.stderr, "allowed host") ||
		!strings.Contains(r.stderr, "cluster task done") {
		t.Errorf("the cluster task's output:\n%s", r.stderr)
	}
	if allowed.count() != 1 || refused.count() != 0 {
		t.Errorf("connections: allowed host %d (want 1), refused host %d (want 0)", allowed.count(), refused.count())
	}
	if sum.State != "exited" || len(sum.Commits) != 2 || sum.BranchStatus != "new" {
		t.Errorf("the summary: %+v", sum)
	}
	if out := e.must(runOpt{dir: p.dir}, "git", "show", "refs/heads/agentbox/kcommit:kube.txt").stdout; out != "made on the cluster\n" {
		t.Errorf("the cluster task's branch in the host repository: kube.txt is %q", out)
	}
	// The refused port of a listed CIDR is reported as a port, not as an
	// unlisted address.
	refusedPort := false
	for _, a := range sum.RefusedAddresses {
		refusedPort = refusedPort || a.Address == kubeGateway && a.Port == kubeRefused && strings.Contains(a.Why, "on a port the policy does not allow")
	}
	if !refusedPort {
		t.Errorf("the summary's refused addresses lack %s:%d as a refused port: %+v", kubeGateway, kubeRefused, sum.RefusedAddresses)
	}
	if !strings.Contains(fmt.Sprint(sum.RefusedNames), unlistedName) {
		t.Errorf("the summary's refused names lack %s: %v", unlistedName, sum.RefusedNames)
	}
	if r := p.agentbox(env, "logs", "kcommit"); r.failed() || !strings.Contains(r.stdout+r.stderr, "cluster task done") {
		t.Errorf("agentbox logs kcommit: %s", r)
	}
	if r := p.agentbox(env, "ps", "--json"); r.failed() || !strings.Contains(r.stdout, `"kcommit"`) {
		t.Errorf("agentbox ps --json: %s", r)
	}
	benchKubeRun(e, p, env) // before testKubeParallel makes the clone too large for a ConfigMap
	testKubeDeadline(e, p, env)
	testKubeStop(e, p, env)
	testKubeParallel(e, p, env)
	if r := p.agentbox(env, "gc"); r.failed() {
		t.Errorf("agentbox gc: %s", r)
	}
	out := e.must(runOpt{env: env}, "kubectl", "-n", "default", "get", "jobs,configmaps,secrets", "-l", "dev.agentbox.project="+p.name, "-o", "name").stdout
	if strings.TrimSpace(out) != "" {
		t.Errorf("agentbox gc left in the cluster: %s", out)
	}
}

// testKubeStop: a detached cluster task is followed by ps and logs, and
// agentbox stop ends it (exit 0, the summary's code 130) and brings its branch back.
func testKubeStop(e *env, p *project, env []string) {
	t := e.t
	// The agent asks for the decoy before it waits (its egress may still
	// start the request endpoint: exit 2).
	script := `cd /workspace; git -c user.name=t -c user.email=t@agentbox.invalid commit -q --allow-empty -m "before the stop"
for i in $(seq 50); do agentbox-request ` + decoyIP + `:80 --reason "e2e: a task on a cluster asks" --for 1m; c=$?; [ $c != 2 ] && break; sleep 0.2; done
echo "asked: exit $c"; echo waiting; sleep 600`
	if r := p.agentbox(env, "run", "--on", "kubernetes", "--detach", "--name", "kstop", "--", "bash", "-c", script); r.failed() {
		t.Fatalf("agentbox run --detach: %s", r)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(p.agentbox(env, "logs", "kstop").stdout, "waiting") {
		if time.Now().After(deadline) {
			t.Fatalf("the detached task never started")
		}
		time.Sleep(time.Second)
	}
	if r := p.agentbox(env, "ps"); !strings.Contains(r.stdout, "kstop") || !strings.Contains(r.stdout, "running") {
		t.Errorf("agentbox ps: %s", r)
	}
	approveKubeTask(e, p, env)
	r := p.agentbox(env, "stop", "kstop", "--json")
	var sum runSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 || sum.ExitCode != 130 || sum.State != "stopped" || sum.BranchStatus != "new" {
		t.Errorf("agentbox stop kstop: exit %d, %+v (%v)\n%s", r.code, sum, err, r.stderr)
	}
	if r := p.agentbox(env, "rm", "kstop"); r.failed() {
		t.Errorf("agentbox rm kstop: %s", r)
	}
}

// testKubeDeadline: a task past its deadline is ended by the egress
// container (exit 124), and its Job then ends DeadlineExceeded.
func testKubeDeadline(e *env, p *project, env []string) {
	t := e.t
	r := p.agentbox(env, "run", "--on", "kubernetes", "--name", "kslow", "--timeout", "10s", "--", "bash", "-c", "trap '' TERM; sleep 600")
	if r.code != 124 {
		t.Errorf("a task past its deadline: exit %d, want 124\n%s", r.code, r)
	}
	job := p.name + "-task-kslow"
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ := exec.Command("kubectl", "--kubeconfig", envValue(env, "KUBECONFIG"), "-n", "default", "get", "job", job,
			"-o", `jsonpath={range .status.conditions[*]}{.type}={.reason} {end}`).Output()
		if strings.Contains(string(out), "Failed=DeadlineExceeded") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("Job %s did not end DeadlineExceeded: %q", job, out)
			break
		}
		time.Sleep(time.Second)
	}
}

// testKubeParallel: two tasks at once, each listening on a port and
// leaving a file in /tmp; each tries every address of the pod network on
// that port and looks for the other's file and processes, and finds only
// its own (reached through its own address: the probe is not blind).
func testKubeParallel(e *env, p *project, env []string) {
	t := e.t
	// A clone larger than a ConfigMap holds reaches the Pod through
	// kubectl exec instead: 1 MiB that does not compress.
	blob := make([]byte, 1<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "large.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(runOpt{dir: p.dir}, "git", "add", "large.bin")
	e.must(runOpt{dir: p.dir}, "git", "-c", "user.name=test", "-c", "user.email=test@agentbox.invalid", "commit", "-qm", "a large file")
	script := `T=$1; echo "$T" > /tmp/mine-$T; echo "$T" > /workspace/mine-$T
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalPort => 7000, Listen => 5, ReuseAddr => 1) or die; while ($c = $s->accept) { print $c "task '"$T"'\n"; close $c }' &
sleep 3
for i in $(seq 2 40); do timeout 0.3 bash -c "exec 3<>/dev/tcp/10.244.77.$i/7000 && cat <&3" 2>/dev/null; done
ls /tmp /workspace | sed 's/^/file /'
[ -s /workspace/large.bin ] && echo "large clone arrived"
for d in /proc/[0-9]*; do tr '\0' ' ' < "$d/cmdline" 2>/dev/null; echo; done | sed 's/^/proc /'
kill %1`
	var wg sync.WaitGroup
	out := map[string]string{}
	var mu sync.Mutex
	for _, name := range []string{"kpar-a", "kpar-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.agentbox(env, "run", "--on", "kubernetes", "--name", name, "--", "bash", "-c", script, "sh", name)
			mu.Lock()
			out[name] = r.stdout + r.stderr
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name, other := range map[string]string{"kpar-a": "kpar-b", "kpar-b": "kpar-a"} {
		o := out[name]
		if !strings.Contains(o, "task "+name) || !strings.Contains(o, "file mine-"+name) || !strings.Contains(o, "large clone arrived") {
			t.Errorf("task %s does not see its own listener and files (a blind probe):\n%s", name, o)
		}
		sc := bufio.NewScanner(strings.NewReader(o))
		for sc.Scan() {
			if strings.Contains(sc.Text(), other) && !strings.HasPrefix(sc.Text(), "agentbox:") {
				t.Errorf("task %s sees task %s: %q", name, other, sc.Text())
			}
		}
	}
}

// benchKubeRun measures agentbox run --on kubernetes -- true, images
// present, and its phases.
func benchKubeRun(e *env, p *project, env []string) {
	var total []time.Duration
	phases := map[string][]time.Duration{}
	for i := range 5 {
		r := p.agentbox(env, "run", "--on", "kubernetes", "--name", fmt.Sprintf("ktrue-%d", i), "--json", "--", "true")
		var sum struct {
			Timings map[string]float64 `json:"timings"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
			e.t.Errorf("agentbox run --on kubernetes -- true: %s", r)
			return
		}
		total = append(total, r.took)
		for k, v := range sum.Timings {
			phases[k] = append(phases[k], time.Duration(v*float64(time.Second)))
		}
	}
	e.timed("agentbox run --on kubernetes -- true, median of 5", median(total))
	for _, k := range []string{"prepare", "start", "command", "collect"} {
		e.timed("  of which "+k+" (median)", median(phases[k]))
	}
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// approveKubeTask: the request of a task on a cluster is listed with the
// sandbox's, approved into its pod's egress (allow --list --task reads it
// there), and not into the sandbox's; blocked and connections read the
// pod's egress log.
func approveKubeTask(e *env, p *project, env []string) {
	t := e.t
	if logs := p.agentbox(env, "logs", "kstop").stdout; !strings.Contains(logs, "asked: exit 3") {
		t.Fatalf("agentbox-request in the cluster task did not leave its request pending: %s", logs)
	}
	r := p.agentbox(env, "requests", "--json")
	var reqs []struct{ ID, Task, State string }
	if err := json.Unmarshal([]byte(r.stdout), &reqs); err != nil {
		t.Fatalf("agentbox requests --json: %v\n%s", err, r)
	}
	id := ""
	for _, q := range reqs {
		if q.Task == "kstop" && q.State == "pending" {
			id = q.ID
		}
	}
	if id == "" {
		t.Fatalf("agentbox requests does not list the cluster task's request: %s", r)
	}
	if r := p.agentbox(env, "approve", id); r.failed() || !strings.Contains(r.stdout, "for task kstop") {
		t.Fatalf("agentbox approve of the cluster task's request: %s", r)
	}
	if r := p.agentbox(env, "allow", "--list", "--task", "kstop"); !strings.Contains(r.stdout, decoyIP+"/32") ||
		!strings.Contains(r.stdout, "e2e: a task on a cluster asks") {
		t.Errorf("agentbox allow --list --task kstop lacks the approved grant: %s", r)
	}
	for _, cmd := range [][]string{{"blocked", "--task", "kstop", "--json"}, {"connections", "--task", "kstop", "--json"}} {
		if r := p.agentbox(env, cmd...); r.failed() {
			t.Errorf("agentbox %s: %s", strings.Join(cmd, " "), r)
		}
	}
}
