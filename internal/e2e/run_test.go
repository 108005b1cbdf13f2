//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// runSummary is the part of agentbox run --json the test reads.
type runSummary struct {
	Task         string   `json:"task"`
	State        string   `json:"state"`
	ExitCode     int      `json:"exit_code"`
	Branch       string   `json:"branch"`
	BranchStatus string   `json:"branch_status"`
	Commits      []string `json:"commits"`
	Uncommitted  []string `json:"uncommitted"`
	RefusedNames []struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	} `json:"refused_names"`
	RefusedAddresses []refusedAddr `json:"refused_addresses"`
}

// refusedAddr is a refused destination of the summary.
type refusedAddr struct {
	Address  string `json:"address"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
	Why      string `json:"why"`
}

// testRun: agentbox run gives each task its own sandbox, clone and deadline.
func testRun(e *env, p *project) {
	t := e.t
	state := filepath.Join(e.work, "state")
	env := []string{"XDG_STATE_HOME=" + state}
	bump(e, p, nil)
	e.trackImages(p.name)
	defer func() {
		p.agentbox(env, "gc")
		e.trackImages(p.name)
	}()

	// A task that commits, leaves a file uncommitted, asks for a name the
	// policy does not allow, and plants a hook and config in its clone.
	// Its first act: reach the host's fake npm registry, which the policy
	// does not allow. The task starts with its egress container; its
	// entrypoint must hold it until the firewall is loaded.
	hostPort := strings.TrimSuffix(strings.TrimPrefix(e.npmURL, "http://"), "/")
	host, port, _ := strings.Cut(hostPort, ":")
	script := `if timeout 3 bash -c 'exec 3<>/dev/tcp/` + host + `/` + port + `' 2>/dev/null; then echo "LEAK: reached the host before the firewall"; fi
set -e; cd /workspace
git commit -q --allow-empty -m "first task commit"
echo made by the task > made.txt; git add made.txt
git commit -q -m "add made.txt"
echo left > uncommitted.txt
printf '#!/bin/sh\ntouch /tmp/agentbox-e2e-hook-ran\n' > .git/hooks/post-merge; chmod +x .git/hooks/post-merge
git config core.fsmonitor "touch /tmp/agentbox-e2e-fsmonitor-ran"
echo '* filter=e2e' > .git/info/attributes; git config filter.e2e.clean 'echo "status COLLECT-RAN-FILTER" >&2; cat'
touch -d 2001-01-01 made.txt
getent hosts ` + unlistedName + ` || true
getent hosts wanted.e2e.test || true
echo "task done in $HOME"`
	r := p.agentbox(env, "run", "--name", "commit", "--json", "--", "bash", "-c", script)
	e.timed("agentbox run (a task that commits)", r.took)
	var sum runSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
		t.Fatalf("agentbox run: exit %d, summary %q (%v)\n%s", r.code, r.stdout, err, r.stderr)
	}
	if strings.Contains(r.stderr, "LEAK") {
		t.Errorf("the task reached a host the policy does not allow:\n%s", r.stderr)
	}
	if sum.State != "exited" || len(sum.Commits) != 2 || sum.BranchStatus != "new" {
		t.Errorf("the summary: %+v", sum)
	}
	if !strings.Contains(strings.Join(sum.Uncommitted, "\n"), "uncommitted.txt") {
		t.Errorf("the summary does not report the uncommitted file: %+v", sum.Uncommitted)
	}
	// The clean filter the task configured in its clone, for a file whose
	// stat changed: the collection's status ran it if it says so.
	if strings.Contains(strings.Join(sum.Uncommitted, "\n"), "COLLECT-RAN") {
		t.Errorf("the collection ran a filter of the task's clone: %+v", sum.Uncommitted)
	}
	refused := fmt.Sprint(sum.RefusedNames)
	if !strings.Contains(refused, unlistedName) {
		t.Errorf("the summary's refused names lack %s: %s", unlistedName, refused)
	}
	// The firewall's record of the refused connection to the host (ulogd
	// in the egress container, its JSON on egress's stdout).
	if !slices.ContainsFunc(sum.RefusedAddresses, func(a refusedAddr) bool {
		return a.Address == host && fmt.Sprint(a.Port) == port && a.Protocol == "tcp"
	}) {
		t.Errorf("the summary's refused addresses lack %s:%s/tcp: %+v\n%s", host, port, sum.RefusedAddresses, r.stderr)
	}
	if out := e.must(runOpt{dir: p.dir}, "git", "show", "refs/heads/agentbox/commit:made.txt").stdout; out != "made by the task\n" {
		t.Errorf("the task's branch in the host repository: made.txt is %q", out)
	}
	// The task committed with no git configuration of its own: as the
	// agent, author and committer (the image's identity, issue 20).
	checkAgentIdentity(e, p.dir, "refs/heads/agentbox/commit")
	// What the task was refused, and the line that would allow it; never
	// the name verify probes (verify.unlisted_name), which it leaves out.
	r = p.agentbox(env, "blocked", "--task", "commit", "--suggest")
	if r.failed() || !strings.Contains(r.stdout, "- wanted.e2e.test") || strings.Contains(r.stdout, "- "+unlistedName) ||
		!regexp.MustCompile(`(?m)^# Left out: .*\n# .*`+regexp.QuoteMeta(unlistedName)).MatchString(r.stdout) {
		t.Errorf("agentbox blocked --task commit --suggest: want wanted.e2e.test suggested, %s left out: %s", unlistedName, r)
	}
	r = p.agentbox(env, "blocked", "--task", "commit", "--json")
	if r.failed() || !strings.Contains(r.stdout, `"`+unlistedName+`"`) || strings.Contains(r.stdout, "agentbox-probe") ||
		!strings.Contains(r.stdout, `"address": "`+host+`"`) {
		t.Errorf("agentbox blocked --task commit --json: %s", r)
	}
	for _, f := range []string{"/tmp/agentbox-e2e-hook-ran", "/tmp/agentbox-e2e-fsmonitor-ran"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists: something the task planted ran on the host", f)
		}
	}
	testRefusedBranch(e, p, env)
	benchRun(e, p, env)
	testDeadline(e, p, env)
	testParallelTasks(e, p, env)
	testTaskCommands(e, p, env)
	testDirect(e, p, env)
}

// testRefusedBranch: a task whose command succeeds but whose branch
// fetch's checks refuse (it changes a protected path) makes run exit 3, and
// the summary says why as fetch does: commit, path, reason.
func testRefusedBranch(e *env, p *project, env []string) {
	t := e.t
	script := `set -e; cd /workspace; mkdir -p .vscode; echo '{}' > .vscode/settings.json
git add .vscode; git -c user.name=task -c user.email=task@agentbox.invalid commit -q -m "editor settings"`
	r := p.agentbox(env, "run", "--name", "refused", "--", "bash", "-c", script)
	if r.code != 3 || !regexp.MustCompile(`refused: [0-9a-f]{12} \.vscode/settings\.json: `).MatchString(r.stderr) || strings.Contains(r.stderr, "{") {
		t.Errorf("a task whose branch was refused: exit %d (want 3)\n%s", r.code, r.stderr)
	}
	if out := e.run(runOpt{dir: p.dir}, "git", "rev-parse", "-q", "--verify", "refs/heads/agentbox/refused").stdout; out != "" {
		t.Errorf("the refused branch is in the host repository: %s", out)
	}
}

// testDeadline: a hostile agent (it ignores signals, forks, tries to kill
// every process it sees, sleeps forever) ends within 2 s of its deadline,
// and so does a task whose agentbox was killed.
func testDeadline(e *env, p *project, env []string) {
	t := e.t
	hostile := `trap "" TERM INT HUP
for i in 1 2 3; do (trap "" TERM INT HUP; while :; do sleep 1; done) & done
for pid in $(ls /proc | grep -E "^[0-9]+$"); do [ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null; done
exec sleep infinity`
	r := p.agentbox(env, "run", "--name", "hostile", "--timeout", "4s", "--json", "--", "bash", "-c", hostile)
	var sum runSummary
	_ = json.Unmarshal([]byte(r.stdout), &sum)
	if r.code != 124 || sum.State != "timed out" {
		t.Errorf("the hostile task: exit %d, summary %+v; want 124, timed out\n%s", r.code, sum, r.stderr)
	}
	checkEndedByDeadline(e, p, "hostile")

	// agentbox itself is killed (SIGKILL, its whole process group): the
	// task still ends at its deadline.
	cmd := exec.Command(e.agentbox, "run", "--name", "orphan", "--timeout", "6s", "--", "sleep", "infinity")
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+e.config)
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool {
		id := e.container(p.name+"-task-orphan", "agent")
		return id != "" && e.state(id).Running
	}) {
		t.Fatal("the orphan task did not start")
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if !waitFor(15*time.Second, func() bool { return !e.state(e.container(p.name+"-task-orphan", "agent")).Running }) {
		t.Fatal("the orphan task still runs 15 s after agentbox was killed (deadline 6 s)")
	}
	checkEndedByDeadline(e, p, "orphan")
	r = p.agentbox(env, "stop", "orphan", "--json")
	// stop collected it: exit 0; the task's own code (124) is in the summary.
	if r.code != 0 || !strings.Contains(r.stdout, `"state": "timed out"`) || !strings.Contains(r.stdout, `"exit_code": 124`) {
		t.Errorf("agentbox stop orphan (collect it): %s\n%s", r, e.run(runOpt{}, "docker", "ps", "-a", "--no-trunc", "--filter", "label=com.docker.compose.project="+p.name+"-task-orphan", "--format", "{{.ID}} {{.Label \"com.docker.compose.service\"}} {{.Status}}").stdout)
	}
}

// checkEndedByDeadline: the task's agent ended no later than 2 s after its
// deadline, and its egress said so and exited 124.
func checkEndedByDeadline(e *env, p *project, task string) {
	t := e.t
	project := p.name + "-task-" + task
	ag, eg := e.container(project, "agent"), e.container(project, "egress")
	out := e.run(runOpt{}, "docker", "inspect", "--format", `{{index .Config.Labels "dev.agentbox.deadline"}} {{.State.FinishedAt}}`, ag).stdout
	var secs int64
	var finished string
	if _, err := fmt.Sscan(out, &secs, &finished); err != nil {
		t.Fatalf("inspecting %s: %q", ag, out)
	}
	end, err := time.Parse(time.RFC3339Nano, finished)
	if err != nil {
		t.Fatal(err)
	}
	late := end.Sub(time.Unix(secs, 0))
	e.timed("task "+task+": agent ended after its deadline by", late)
	if late > 2*time.Second || late < -time.Second {
		t.Errorf("task %s: the agent ended %v after its deadline; want within 2 s", task, late)
	}
	// The egress stops its helpers (resolver, logger, gateway, keeper)
	// after the agent's processes end: it exits a moment later.
	waitFor(5*time.Second, func() bool { return !e.state(eg).Running })
	if st := e.state(eg); st.Running || st.ExitCode != 124 {
		t.Errorf("task %s: egress %+v, want exited 124; its log:\n%s", task, st, tail(e.logsOf(eg), 15))
	}
	if log := e.logsOf(eg); !strings.Contains(log, "deadline reached") {
		t.Errorf("task %s: the egress log does not say the deadline came:\n%s", task, tail(log, 10))
	}
}

// testParallelTasks: three tasks at once, each trying to reach the others
// through the network, the file system and processes: nothing gets through.
func testParallelTasks(e *env, p *project, env []string) {
	t := e.t
	names := []string{"par-a", "par-b", "par-c"}
	for _, n := range names {
		// Each task leaves a file in its workspace and in /tmp, and listens
		// on TCP port 8080 (perl: the base image has no other listener).
		script := `echo ` + n + ` > /workspace/mine-` + n + `; echo ` + n + ` > /tmp/mine-` + n + `
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die; while ($c = $s->accept) { print $c "` + n + `\n"; close $c }' 2>/tmp/listener.err &
exec -a agentbox-task-` + n + ` sleep 600`
		r := p.agentbox(env, "run", "--name", n, "--detach", "--timeout", "5m", "--", "bash", "-c", script)
		if r.failed() {
			t.Fatalf("agentbox run --detach %s: %s", n, r)
		}
	}
	addr := map[string]string{}
	for _, n := range names {
		id := e.container(p.name+"-task-"+n, "egress")
		addr[n] = strings.TrimSpace(e.run(runOpt{}, "docker", "inspect", "--format", `{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}`, id).stdout)
	}
	// Each listener answers its own task before the probes start (perl
	// takes its time on a loaded machine; a fixed pause made the probes
	// blind there).
	for _, n := range names {
		ag := e.container(p.name+"-task-"+n, "agent")
		if !waitFor(30*time.Second, func() bool {
			out := e.run(runOpt{}, "docker", "exec", ag, "bash", "-c", `timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; head -n 1 <&3' 2>/dev/null`).stdout
			return strings.TrimSpace(out) == n
		}) {
			t.Fatalf("task %s: its listener did not answer within 30 s", n)
		}
	}
	for _, n := range names {
		probe := `for f in /workspace/mine-* /tmp/mine-*; do echo "file $f"; done
for c in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$c" 2>/dev/null; echo; done | grep -o "agentbox-task-par-[a-z]" | sort -u | sed "s/^/proc /"
timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080; head -n 1 <&3' | sed "s/^/self /"
cat /tmp/listener.err 2>/dev/null | sed "s/^/listener: /"`
		for _, m := range names {
			if m != n {
				probe += "\ntimeout 2 bash -c 'exec 3<>/dev/tcp/" + addr[m] + "/8080; head -n 1 <&3' 2>/dev/null | sed 's/^/net /'"
			}
		}
		ag := e.container(p.name+"-task-"+n, "agent")
		out := e.run(runOpt{}, "docker", "exec", ag, "bash", "-c", probe).stdout
		for _, m := range names {
			if m != n && strings.Contains(out, m) {
				t.Errorf("task %s reaches task %s:\n%s", n, m, out)
			}
		}
		for _, want := range []string{"file /workspace/mine-" + n, "file /tmp/mine-" + n, "proc agentbox-task-" + n, "self " + n} {
			if !strings.Contains(out, want) {
				t.Errorf("task %s: the probe does not see its own %q (the probe is blind):\n%s", n, want, out)
			}
		}
	}
	r := p.agentbox(env, "ps")
	for _, n := range names {
		if !strings.Contains(r.stdout, n) || !strings.Contains(r.stdout, "running") {
			t.Errorf("agentbox ps does not list %s running:\n%s", n, r.stdout)
		}
	}
	for _, n := range names {
		if r := p.agentbox(env, "stop", n); r.code != 0 || !strings.Contains(r.stderr, "task "+n+" stopped") {
			t.Errorf("agentbox stop %s: exit %d, want 0 and the summary saying stopped: %s", n, r.code, r)
		}
	}
}

// testTaskCommands: ps --json, logs, rm and gc; gc leaves nothing behind
// but the branches.
func testTaskCommands(e *env, p *project, env []string) {
	t := e.t
	r := p.agentbox(env, "ps", "--json")
	var rows []struct {
		Task     string `json:"task"`
		State    string `json:"state"`
		ExitCode *int   `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 17 {
		t.Fatalf("agentbox ps --json: %v\n%s", err, r.stdout)
	}
	// The command reached the container as written: compose did not
	// interpolate its $HOME.
	if r := p.agentbox(env, "logs", "commit"); !strings.Contains(r.stdout, "task done in /home/agent") {
		t.Errorf("agentbox logs commit: %s", r)
	}
	if r := p.agentbox(env, "rm", "commit"); r.failed() {
		t.Errorf("agentbox rm commit: %s", r)
	}
	if r := p.agentbox(env, "gc"); r.failed() || !strings.Contains(r.stderr, "16 tasks removed") {
		t.Errorf("agentbox gc: %s", r)
	}
	for _, what := range [][]string{
		{"ps", "-a", "-q", "--filter", "label=dev.agentbox.project=" + p.name},
		{"volume", "ls", "-q", "--filter", "name=" + p.name + "-task-"},
		{"network", "ls", "-q", "--filter", "name=" + p.name + "-task-"},
	} {
		if out := strings.TrimSpace(e.run(runOpt{}, "docker", what...).stdout); out != "" {
			t.Errorf("after gc, docker %s: %s", strings.Join(what, " "), out)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(e.work, "state", "agentbox", "tasks", p.name, "*")); len(left) > 0 {
		t.Errorf("after gc, task directories are left: %v", left)
	}
	if out := e.must(runOpt{dir: p.dir}, "git", "branch", "--list", "agentbox/*").stdout; !strings.Contains(out, "agentbox/commit") {
		t.Errorf("the task's branch did not survive gc: %q", out)
	}
}

// benchRun times agentbox run -- true, ten times: from start to exit,
// everything included, with the images built.
func benchRun(e *env, p *project, env []string) {
	t := e.t
	var total []time.Duration
	phases := map[string][]time.Duration{}
	for i := range 10 {
		r := p.agentbox(env, "run", "--name", fmt.Sprintf("bench-%d", i), "--json", "--", "true")
		var sum struct {
			Timings      map[string]float64 `json:"timings"`
			BranchStatus string             `json:"branch_status"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 {
			t.Fatalf("agentbox run -- true: %s", r)
		}
		if i == 0 && sum.BranchStatus != "empty: no new commit" { // a task that commits nothing says so
			t.Errorf("agentbox run -- true: branch_status %q, want empty: no new commit", sum.BranchStatus)
		}
		total = append(total, r.took)
		for k, v := range sum.Timings {
			phases[k] = append(phases[k], time.Duration(v*float64(time.Second)))
		}
	}
	e.timed("agentbox run -- true, median of 10 (start to exit, cleanup included)", median(total))
	for _, k := range []string{"prepare", "start", "command", "collect"} {
		e.timed("  of which "+k+" (median)", median(phases[k]))
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// agentIdentity is the author and committer of an agent none's commits.
const agentIdentity = "Agent (agentbox) <agent@agentbox.invalid>"

// checkAgentIdentity checks that the commit at rev in the repository dir
// was authored and committed as the agent.
func checkAgentIdentity(e *env, dir, rev string) {
	out := strings.TrimSpace(e.must(runOpt{dir: dir}, "git", "log", "-1", "--format=%an <%ae>|%cn <%ce>", rev).stdout)
	if want := agentIdentity + "|" + agentIdentity; out != want {
		e.t.Errorf("the agent's commit %s: author|committer %q, want %q", rev, out, want)
	}
}
