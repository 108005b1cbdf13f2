package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGeminiScript(t *testing.T) {
	fake := NewGemini(
		GeminiStep{Calls: []GeminiCall{{Name: "run_shell_command", Args: map[string]any{"command": "true"}}}},
		GeminiStep{Text: "done"},
	)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	post := func(path, key, body string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("x-goog-api-key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	user := `{"role":"user","parts":[{"text":"go"}]}`
	call := `{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"true"}}}]}`
	result := `{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"ok"}}}]}`

	code, ctype, body := post("/v1beta/models/m:streamGenerateContent?alt=sse", "k1", `{"contents":[`+user+`]}`)
	if code != 200 || ctype != "text/event-stream" || !strings.HasPrefix(body, "data: ") || !strings.HasSuffix(body, "\r\n\r\n") ||
		!strings.Contains(body, `"functionCall":{"name":"run_shell_command","args":{"command":"true"}}`) {
		t.Errorf("step 0: %d %s %q", code, ctype, body)
	}
	code, _, body = post("/v1beta/models/m:generateContent?key=k2", "", `{"contents":[`+user+`,`+call+`,`+result+`]}`)
	var resp struct {
		Candidates []struct {
			Content geminiContent `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(body), &resp); code != 200 || err != nil || len(resp.Candidates) != 1 ||
		resp.Candidates[0].Content.Parts[0].Text != "done" {
		t.Errorf("step 1: %d %v %q", code, err, body)
	}
	// The CLI's own JSON questions get the least value of the schema.
	_, _, body = post("/v1beta/models/m:generateContent", "k1", `{"contents":[`+user+`],"generationConfig":{"responseMimeType":"application/json",
		"responseJsonSchema":{"type":"object","properties":{"score":{"type":"number","minimum":3},"why":{"type":"string"},"pick":{"type":"string","enum":["a","b"]}}}}}`)
	if !strings.Contains(body, `"text":"{\"pick\":\"a\",\"score\":3,\"why\":\"fake\"}"`) {
		t.Errorf("JSON answer: %s", body)
	}
	if code, _, body = post("/v1beta/models/m:countTokens", "k1", `{"contents":[`+user+`]}`); code != 200 || !strings.Contains(body, "totalTokens") {
		t.Errorf("countTokens: %d %s", code, body)
	}
	if code, _, body = post("/v1beta/models/m:embedContent", "k1", `{}`); code != 404 || !strings.Contains(body, "does not serve POST /v1beta/models/m:embedContent") {
		t.Errorf("unknown method: %d %s", code, body)
	}

	reqs := fake.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests recorded, want 5", len(reqs))
	}
	for i, want := range []struct {
		key, action   string
		step, results int
	}{{"k1", "streamGenerateContent", 0, 0}, {"k2", "generateContent", 1, 1}, {"k1", "generateContent", -1, 0}, {"k1", "countTokens", -1, 0}, {"k1", "", -1, 0}} {
		r := reqs[i]
		if r.Key != want.key || r.Action != want.action || r.Step != want.step || len(r.FunctionResponses) != want.results {
			t.Errorf("request %d: key %q action %q step %d results %d, want %+v", i, r.Key, r.Action, r.Step, len(r.FunctionResponses), want)
		}
	}
	if got := string(reqs[1].FunctionResponses[0].Response); got != `{"output":"ok"}` {
		t.Errorf("function response %s", got)
	}
}

func TestChatScript(t *testing.T) {
	fake := NewChat(ChatStep{Calls: []ChatCall{{Name: "bash", Args: map[string]any{"command": "true"}}}}, ChatStep{Text: "done"})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	if code != 200 || !strings.Contains(body, `"tool_calls":[{"function":{"arguments":"{\"command\":\"true\"}","name":"bash"}`) ||
		!strings.Contains(body, `"finish_reason":"tool_calls"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("step 0: %d %s", code, body)
	}
	code, body = post("/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c","content":"ok"}]}`)
	if code != 200 || !strings.Contains(body, `"content":"done"`) || !strings.Contains(body, `"object":"chat.completion"`) {
		t.Errorf("step 1: %d %s", code, body)
	}
	if code, body = post("/v1/embeddings", `{}`); code != 404 || !strings.Contains(body, "does not serve POST /v1/embeddings") {
		t.Errorf("unknown path: %d %s", code, body)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 || reqs[0].Step != 0 || !reqs[0].Stream || reqs[1].Step != 1 || len(reqs[1].ToolResults) != 1 ||
		reqs[1].ToolResults[0] != "ok" || reqs[1].Authorization != "Bearer k" || reqs[2].Step != -1 {
		t.Errorf("requests: %+v", reqs)
	}
}
