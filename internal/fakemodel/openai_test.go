package fakemodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// openAIEvents posts body to the fake and returns the events it streamed.
func openAIEvents(t *testing.T, url, body string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/responses", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
		} else if d, ok := strings.CutPrefix(line, "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(d), &ev); err != nil || ev["type"] != name {
				t.Fatalf("event %s: %v: %s", name, err, d)
			}
			events = append(events, ev)
		}
	}
	return events
}

// TestOpenAIScript: the first turn calls the shell tool the request
// offers, with that tool's argument shape; after its output, the final
// message; every stream starts with response.created and ends with
// response.completed and its usage.
func TestOpenAIScript(t *testing.T) {
	f := NewOpenAI("echo hi", "done now")
	srv := httptest.NewServer(f)
	defer srv.Close()
	for _, c := range []struct{ tools, wantType, wantName, wantArg string }{
		{`"tools":[{"type":"function","name":"shell_command"}]`, "function_call", "shell_command", `{"command":"echo hi"}`},
		{`"tools":[{"type":"function","name":"exec_command"}]`, "function_call", "exec_command", `{"cmd":"echo hi"}`},
		{`"tools":[{"type":"function","name":"shell"}]`, "function_call", "shell", `{"command":["bash","-c","echo hi"]}`},
		{`"tools":[],"input":[{"type":"additional_tools","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"}]}]}]`,
			"custom_tool_call", "exec", "const r = await tools.exec_command({\"cmd\":\"echo hi\"});\ntext(r);\n"},
	} {
		ev := openAIEvents(t, srv.URL, `{"model":"m","stream":true,`+c.tools+`}`)
		if ev[0]["type"] != "response.created" || ev[len(ev)-1]["type"] != "response.completed" {
			t.Fatalf("%s: events from %v to %v", c.wantName, ev[0]["type"], ev[len(ev)-1]["type"])
		}
		var done map[string]any
		for _, e := range ev {
			if e["type"] == "response.output_item.done" {
				done = e["item"].(map[string]any)
			}
		}
		arg, _ := done["arguments"].(string)
		if c.wantType == "custom_tool_call" {
			arg, _ = done["input"].(string)
		}
		if done["type"] != c.wantType || done["name"] != c.wantName || arg != c.wantArg || done["call_id"] == "" {
			t.Errorf("%s: the call is %v", c.wantName, done)
		}
		usage := ev[len(ev)-1]["response"].(map[string]any)["usage"].(map[string]any)
		if usage["total_tokens"] == nil {
			t.Errorf("response.completed has no usage: %v", ev[len(ev)-1])
		}
	}
	ev := openAIEvents(t, srv.URL, `{"model":"m","input":[{"type":"function_call_output","call_id":"call_1","output":"hi"}]}`)
	var text string
	for _, e := range ev {
		if e["type"] == "response.output_text.delta" {
			text += e["delta"].(string)
		}
	}
	if text != "done now" {
		t.Errorf("final message deltas: %q", text)
	}
	reqs := f.OpenAIRequests()
	if len(reqs) != 5 || reqs[4].Output != "hi\n" || reqs[0].Authorization != "Bearer k" || reqs[0].Tool != "shell_command" {
		t.Errorf("recorded requests: %+v", reqs)
	}
	// No shell tool offered: an error the CLI shows, not a guess.
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"tools":[{"type":"function","name":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no shell tool: status %d", resp.StatusCode)
	}
}

// TestOpenAISteps: with Steps, a conversation holding n tool outputs gets
// call n+1 (its own call id), then the final message; the request records
// every output.
func TestOpenAISteps(t *testing.T) {
	f := &OpenAI{Final: "done", Steps: []OpenAIStep{{Command: "echo one"}, {Tool: "request_network_access", Args: map[string]any{"destination": "x"}}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	const tools = `"tools":[{"type":"function","name":"shell_command"},{"type":"function","name":"mcp__agentbox__request_network_access"}]`
	item := func(body string) map[string]any {
		for _, e := range openAIEvents(t, srv.URL, body) {
			if e["type"] == "response.output_item.done" {
				return e["item"].(map[string]any)
			}
		}
		t.Fatal("no item")
		return nil
	}
	if it := item(`{"model":"m",` + tools + `}`); it["name"] != "shell_command" || it["call_id"] != "call_1" {
		t.Fatalf("first: %v", it)
	}
	one := `{"type":"function_call_output","call_id":"call_1","output":"refused"}`
	if it := item(`{"model":"m",` + tools + `,"input":[` + one + `]}`); it["name"] != "mcp__agentbox__request_network_access" || it["call_id"] != "call_2" {
		t.Fatalf("second: %v", it)
	}
	two := `{"type":"function_call_output","call_id":"call_2","output":"state: approved"}`
	if it := item(`{"model":"m",` + tools + `,"input":[` + one + `,` + two + `]}`); it["type"] != "message" {
		t.Fatalf("third: %v", it)
	}
	if r := f.OpenAIRequests(); len(r) != 3 || strings.Join(r[2].Outputs, "|") != "refused|state: approved" {
		t.Fatalf("outputs %+v", r)
	}
}
