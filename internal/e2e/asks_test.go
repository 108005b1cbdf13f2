//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/fakemodel"
)

// The real agent CLIs ask for a grant through agentbox's MCP server (issue
// 25): in the sandbox, the fake model has the CLI try a destination that
// the policy refuses, then call the MCP tool request_network_access with
// wait; the test, as the person at the host, finds the request in agentbox
// requests and approves it; the tool's answer reaches the model, whose next
// step tries the destination again, and it passes.

// askReason is the reason the fake model gives in its request.
const askReason = "e2e: the agent asks through MCP"

// askTarget is the destination the agents ask for: the fake internet's
// decoy host, which no policy allows (the sandbox is up with the fake DNS,
// on the fake internet's network, as in Approve). The model's probe sends
// an HTTP request there with a path of the agent's own, which the decoy
// logs.
type askTarget struct {
	e     *env
	dest  string // 198.18.0.99:80
	path  string // /asked-by-AGENT
	probe string // the shell command the model runs: prints connected or refused
}

func newAskTarget(e *env, who string) *askTarget {
	a := &askTarget{e: e, dest: decoyIP + ":80", path: "/asked-by-" + who}
	a.probe = "if timeout 3 bash -c 'exec 3<>/dev/tcp/" + decoyIP + "/80 && printf \"GET " + a.path +
		" HTTP/1.0\\r\\n\\r\\n\" >&3 && head -c 12 <&3' >/dev/null 2>&1; then echo connected; else echo refused; fi"
	return a
}

// reached tells whether the decoy logged the probe's request.
func (a *askTarget) reached() bool {
	return strings.Contains(a.e.logsOf(a.e.decoyName), " GET "+a.path+" ")
}

// toolInput is the MCP tool's input the fake model sends.
func (a *askTarget) toolInput() map[string]any {
	return map[string]any{"destination": a.dest, "reason": askReason, "duration": "5m", "wait": true}
}

// approveWhileAgentWaits runs agentbox args (the agent's CLI in the
// running sandbox) in the background, waits for its request for the
// target in agentbox requests, checks that nothing reached the target
// until then, approves the request, and returns the command's result, the
// request's ID and how long the approval took to reach the target.
func approveWhileAgentWaits(e *env, p *project, env []string, target *askTarget, args ...string) (result, string, time.Duration) {
	t := e.t
	done := make(chan result, 1)
	go func() { done <- p.agentbox(env, args...) }()
	var id string
	var r result
	found := waitFor(3*time.Minute, func() bool {
		select {
		case r = <-done: // the agent ended without asking
			done <- r
			return true
		default:
		}
		var reqs []struct{ ID, Destination, State string }
		if err := json.Unmarshal([]byte(p.agentbox(env, "requests", "--json").stdout), &reqs); err != nil {
			return false
		}
		for _, q := range reqs {
			if q.Destination == target.dest && q.State == "pending" {
				id = q.ID
				return true
			}
		}
		return false
	})
	if !found || id == "" {
		r = <-done
		t.Fatalf("no pending request for %s in agentbox requests; the agent: %s", target.dest, r)
	}
	if target.reached() {
		t.Errorf("the agent reached %s before the approval", target.dest)
	}
	start := time.Now()
	if r := p.agentbox(env, "approve", id); r.failed() || !strings.Contains(r.stdout, "approved "+id) {
		t.Fatalf("agentbox approve %s: %s", id, r)
	}
	var reached time.Duration
	waitFor(time.Minute, func() bool {
		if target.reached() {
			reached = time.Since(start)
			return true
		}
		return false
	})
	r = <-done
	if !target.reached() {
		t.Errorf("the agent's connection after the approval did not reach %s: %s", target.dest, r)
	}
	if a := p.agentbox(env, "audit", "--json"); !strings.Contains(a.stdout, fmt.Sprintf(`"request": "%s"`, id)) ||
		!strings.Contains(a.stdout, askReason) {
		t.Errorf("agentbox audit --json lacks the approved request %s:\n%s", id, a.stdout)
	}
	return r, id, reached
}

// checkAskResults: the tool results that reached the model, in order, say
// refused, approved, connected.
func checkAskResults(e *env, who string, results []string) {
	want := []string{"refused", "state: approved", "connected"}
	ok := len(results) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.Contains(results[i], want[i]) && (i != 1 || !strings.Contains(results[i], "state: pending"))
	}
	if !ok {
		e.t.Errorf("%s: the tool results that reached the model: %q, want each to say %q", who, results, want)
	}
}

// claudeAsks: up, then Claude Code in the sandbox (agentbox shell -- claude
// -p) with the catalog's managed settings and MCP configuration: the Bash
// tool's probe is refused, the MCP tool mcp__agentbox__request_network_access
// waits for the test's approval, the Bash tool's next probe connects.
func claudeAsks(e *env, p *project, models *modelServer, env []string) {
	target := newAskTarget(e, "claude")
	bash := fakemodel.AnthropicCall{Tool: "Bash", Input: map[string]any{"command": target.probe, "description": "Reach the host"}}
	fake := models.nextSteps(bash, fakemodel.AnthropicCall{Tool: "mcp__agentbox__request_network_access", Input: target.toolInput()}, bash)
	start := time.Now()
	p.mustAgentbox(env, "up")
	upWithFakeDNS(e, p, env)
	e.timed("claude asks: agentbox up, then with the fake DNS (built images)", time.Since(start))
	defer p.agentbox(env, "down")
	r, _, reached := approveWhileAgentWaits(e, p, env, target, "shell", "--", "env", "ANTHROPIC_API_KEY="+claudeKey, "claude", "-p", "Reach "+target.dest+".")
	e.timed("claude asks: agentbox shell -- claude -p (probe, MCP request, approval, probe)", r.took)
	e.timed("claude asks: agentbox approve until the agent's connection (MCP tool's wait: every 2 s)", reached)
	checkClaudeTurns(e, fake, r)
	checkAskResults(e, "claude", fake.ToolResults())
}

// geminiAsks: in the sandbox up with the fake DNS, Gemini CLI (gemini
// --yolo -p: the shell tool needs it; the MCP server is trusted in the
// system defaults, TestGeminiCLIAsksForAGrant runs without it) probes the
// decoy, refused, calls mcp_agentbox_request_network_access with wait,
// the test approves, and the next probe passes.
func geminiAsks(e *env, p *project, models *geminiModels, env []string) {
	t := e.t
	target := newAskTarget(e, "gemini")
	probe := fakemodel.GeminiStep{Calls: []fakemodel.GeminiCall{{Name: "run_shell_command", Args: map[string]any{
		"command": target.probe, "description": "reach the host"}}}}
	fake := fakemodel.NewGemini(probe,
		fakemodel.GeminiStep{Calls: []fakemodel.GeminiCall{{Name: "mcp_agentbox_request_network_access", Args: target.toolInput()}}},
		probe, fakemodel.GeminiStep{Text: geminiFinal})
	models.cur.Store(fake)
	r, _, reached := approveWhileAgentWaits(e, p, env, target, "shell", "--", "env", "GEMINI_API_KEY="+geminiKey, "gemini", "--yolo", "-p", "Reach "+target.dest+".")
	e.timed("gemini asks: agentbox shell -- gemini -p (probe, MCP request, approval, probe)", r.took)
	e.timed("gemini asks: agentbox approve until the agent's connection", reached)
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatalf("gemini asked the model nothing: %s", r)
	}
	var results []string
	for _, f := range reqs[len(reqs)-1].FunctionResponses {
		results = append(results, string(f.Response))
	}
	checkAskResults(e, "gemini", results)
}

// openAIAsks: in the sandbox up with the fake DNS, Codex or OpenCode
// probes the decoy, refused, calls agentbox's request_network_access (Codex
// names it mcp__agentbox__..., OpenCode agentbox_...) with wait, the test
// approves, and the next probe passes. On failure, the model's requests
// are logged.
func openAIAsks(e *env, p *project, a openAIAgent, models *codexModels, env []string) {
	target := newAskTarget(e, a.name)
	probe := fakemodel.OpenAIStep{Command: target.probe}
	// Codex's code mode nests the MCP tool by its full name; OpenCode
	// offers it as a function, found by its suffix.
	tool := map[string]string{"codex": "mcp__agentbox__request_network_access"}[a.name]
	if tool == "" {
		tool = "request_network_access"
	}
	fake := &fakemodel.OpenAI{Final: codexFinal, Steps: []fakemodel.OpenAIStep{
		probe, {Tool: tool, Args: target.toolInput()}, probe}}
	models.cur.Store(fake)
	defer func() {
		if e.t.Failed() {
			for i, q := range fake.OpenAIRequests() {
				e.t.Logf("%s: model request %d: %s %s, %d tool outputs, answered with tool %q; body %.1500s", a.name, i, q.Method, q.Path, len(q.Outputs), q.Tool, q.Body)
			}
		}
	}()
	r, _, reached := approveWhileAgentWaits(e, p, env, target, append([]string{"shell", "--", "env", "OPENAI_API_KEY=" + codexKey}, a.args...)...)
	e.timed(a.name+" asks: agentbox shell (probe, MCP request, approval, probe)", r.took)
	e.timed(a.name+" asks: agentbox approve until the agent's connection", reached)
	var results []string
	for _, q := range fake.OpenAIRequests() {
		if len(q.Outputs) > len(results) {
			results = q.Outputs
		}
	}
	checkAskResults(e, a.name, results)
}
