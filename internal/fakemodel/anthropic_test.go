package fakemodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// anthropicEvents posts body to the fake and returns the streamed events'
// data, in order.
func anthropicEvents(t *testing.T, url, body string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", "sk-test")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var out []map[string]any
	sc := bufio.NewScanner(res.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("event %s: %v", name, err)
			}
			if d["type"] != name {
				t.Fatalf("event %s carries type %v", name, d["type"])
			}
			out = append(out, d)
		}
	}
	return out
}

// TestAnthropicScript checks the fake's two turns as a client reads them: the
// tool call's input reassembled from its input_json_delta fragments, the stop
// reasons, and the final text once the tool's result comes back.
func TestAnthropicScript(t *testing.T) {
	fake := NewAnthropic("echo hi > f && git add f && git commit -qm f")
	srv := httptest.NewServer(fake)
	defer srv.Close()

	first := anthropicEvents(t, srv.URL, `{"model":"m","stream":true,"tools":[{"name":"Read"},{"name":"Bash"}],
		"messages":[{"role":"user","content":"write f"}]}`)
	var input, stop string
	var names []string
	for _, e := range first {
		names = append(names, e["type"].(string))
		if d, ok := e["delta"].(map[string]any); ok {
			if p, ok := d["partial_json"].(string); ok {
				input += p
			}
			if s, ok := d["stop_reason"].(string); ok {
				stop = s
			}
		}
	}
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" || stop != "tool_use" {
		t.Fatalf("events %v, stop %q", names, stop)
	}
	var in map[string]string
	if err := json.Unmarshal([]byte(input), &in); err != nil || in["command"] != fake.Command {
		t.Fatalf("tool input %q (%v)", input, err)
	}

	second := anthropicEvents(t, srv.URL, `{"model":"m","stream":true,"tools":[{"name":"Bash"}],"messages":[
		{"role":"user","content":"write f"},
		{"role":"assistant","content":[{"type":"tool_use","id":"`+AnthropicToolUseID+`","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+AnthropicToolUseID+`","content":[{"type":"text","text":"[main 1234] f"}]}]}]}`)
	var text string
	for _, e := range second {
		if d, ok := e["delta"].(map[string]any); ok {
			if s, ok := d["text"].(string); ok {
				text += s
			}
			if s, ok := d["stop_reason"].(string); ok {
				stop = s
			}
		}
	}
	if text != AnthropicFinalText || stop != "end_turn" {
		t.Fatalf("final text %q, stop %q", text, stop)
	}
	if got := fake.ToolResults(); len(got) != 1 || got[0] != "[main 1234] f" {
		t.Fatalf("tool results %q", got)
	}
	if reqs := fake.Requests(); len(reqs) != 2 || reqs[0].Header.Get("x-api-key") != "sk-test" {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestAnthropicSteps: with Steps, each request that carries the results of
// the first n calls gets call n+1 (its id and tool), then the final text.
func TestAnthropicSteps(t *testing.T) {
	fake := &Anthropic{Steps: []AnthropicCall{
		{Tool: "Bash", Input: map[string]any{"command": "true"}},
		{Tool: "mcp__agentbox__request_network_access", Input: map[string]any{"destination": "example.com"}},
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	call := func(body string) (id, name, text string) {
		for _, e := range anthropicEvents(t, srv.URL, body) {
			if b, ok := e["content_block"].(map[string]any); ok && b["type"] == "tool_use" {
				id, name = b["id"].(string), b["name"].(string)
			}
			if d, ok := e["delta"].(map[string]any); ok {
				if s, ok := d["text"].(string); ok {
					text += s
				}
			}
		}
		return id, name, text
	}
	const tools = `"tools":[{"name":"Bash"},{"name":"mcp__agentbox__request_network_access"}]`
	if id, name, _ := call(`{"stream":true,` + tools + `,"messages":[{"role":"user","content":"go"}]}`); id != AnthropicToolUseID || name != "Bash" {
		t.Fatalf("first call %q %q", id, name)
	}
	one := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_agentbox_fake_01","content":"refused"}]}`
	if id, name, _ := call(`{"stream":true,` + tools + `,"messages":[{"role":"user","content":"go"},` + one + `]}`); id != "toolu_agentbox_fake_02" || name != "mcp__agentbox__request_network_access" {
		t.Fatalf("second call %q %q", id, name)
	}
	two := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_agentbox_fake_02","content":[{"type":"text","text":"state: approved"}]}]}`
	if _, _, text := call(`{"stream":true,` + tools + `,"messages":[{"role":"user","content":"go"},` + one + `,` + two + `]}`); text != AnthropicFinalText {
		t.Fatalf("final text %q", text)
	}
	if got := fake.ToolResults(); len(got) != 2 || got[0] != "refused" || got[1] != "state: approved" {
		t.Fatalf("tool results %q", got)
	}
}
