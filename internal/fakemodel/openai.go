package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// OpenAI is a scripted fake of the OpenAI Responses API (POST /responses,
// streamed as server-sent events), the protocol Codex speaks to a model
// provider. Its script has two turns: while the conversation holds no tool
// output, the model calls the agent's shell tool with Command; once the
// tool's output comes back, it answers Final and ends the turn. It records
// every request. The zero value is not usable: call NewOpenAI.
type OpenAI struct {
	Command string // the shell script the model asks the agent to run
	Final   string // the model's last message
	// Tool, when not empty, is called instead of the shell: the offered
	// tool whose name ends in Tool (an MCP server's, whatever prefix the
	// CLI gives it), with Args.
	Tool string
	Args map[string]any

	mu       sync.Mutex
	requests []OpenAIRequest
}

// OpenAIRequest is one request the fake received.
type OpenAIRequest struct {
	Method, Path  string
	Authorization string // the Authorization header as sent
	Body          []byte
	Tool          string // the tool the fake called in its answer ("" for none)
	Output        string // the tool output the request carried ("" for none)
}

// NewOpenAI returns the fake with its script.
func NewOpenAI(command, final string) *OpenAI {
	return &OpenAI{Command: command, Final: final}
}

// OpenAIRequests returns the requests received so far.
func (f *OpenAI) OpenAIRequests() []OpenAIRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]OpenAIRequest(nil), f.requests...)
}

// openAIInput is the part of a Responses request the fake reads.
type openAIInput struct {
	Model string       `json:"model"`
	Tools []openAITool `json:"tools"`
	Input []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
		Tools  []openAITool    `json:"tools"` // an additional_tools item's
	} `json:"input"`
}

// openAITool is a tool the request offers: a function, a custom tool, or
// a namespace of tools.
type openAITool struct {
	Type  string       `json:"type"`
	Name  string       `json:"name"`
	Tools []openAITool `json:"tools"`
}

// ServeHTTP answers POST …/responses and GET …/models; every other request
// is recorded and answered 404.
func (f *OpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := OpenAIRequest{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: body}
	defer func() {
		f.mu.Lock()
		f.requests = append(f.requests, rec)
		f.mu.Unlock()
	}()
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		// The model list: none beyond what the client knows.
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[],"models":[]}`)
		return
	case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses"):
		http.NotFound(w, r)
		return
	}
	var in openAIInput
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, "fakemodel: not a Responses request: "+err.Error(), http.StatusBadRequest)
		return
	}
	rec.Output = openAIToolOutput(in)
	var items []openAIItem
	if rec.Output == "" && (f.Command != "" || f.Tool != "") && openAIOffersTools(in) {
		call, err := openAIShellCall(in, f.Command)
		if f.Tool != "" {
			call, err = openAIToolCall(in, f.Tool, f.Args)
		}
		if err != nil {
			http.Error(w, "fakemodel: "+err.Error(), http.StatusBadRequest)
			return
		}
		rec.Tool = call.Name
		items = append(items, call)
	} else {
		items = append(items, openAIItem{Type: "message", ID: "msg_1", Role: "assistant", Status: "completed",
			Content: []openAIContent{{Type: "output_text", Text: f.Final, Annotations: []any{}}}})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	var b bytes.Buffer
	openAIStream(&b, in.Model, items)
	_, _ = w.Write(b.Bytes())
}

// openAIToolOutput returns the output of the last function call in the
// conversation, or "".
func openAIToolOutput(in openAIInput) string {
	for i := len(in.Input) - 1; i >= 0; i-- {
		it := in.Input[i]
		if it.Type != "function_call_output" && it.Type != "custom_tool_call_output" {
			continue
		}
		var s string
		if json.Unmarshal(it.Output, &s) == nil {
			return s + "\n"
		}
		return string(it.Output) + "\n"
	}
	return ""
}

// openAIOffersTools reports whether the request offers the model any
// tool: a request that offers none (a session title, a summary) gets the
// final message.
func openAIOffersTools(in openAIInput) bool {
	if len(in.Tools) > 0 {
		return true
	}
	for _, it := range in.Input {
		if len(it.Tools) > 0 {
			return true
		}
	}
	return false
}

// openAIShellCall builds a call of whichever shell tool the request
// offers, with its own argument shape: shell_command and exec_command take
// one command line; shell takes an argv; bash (OpenCode's) a command line
// and a description. In Codex's code mode the one tool
// is exec, which runs JavaScript that calls the nested tools.
func openAIShellCall(in openAIInput, script string) (openAIItem, error) {
	offered := map[string]string{} // name -> type
	var names []string
	var walk func([]openAITool)
	walk = func(ts []openAITool) {
		for _, t := range ts {
			if t.Type == "namespace" {
				walk(t.Tools)
				continue
			}
			offered[t.Name] = t.Type
			names = append(names, t.Name)
		}
	}
	walk(in.Tools)
	for _, it := range in.Input {
		walk(it.Tools)
	}
	if offered["exec_command"] == "" && offered["exec"] == "custom" {
		cmd, err := json.Marshal(map[string]any{"cmd": script})
		if err != nil {
			return openAIItem{}, err
		}
		js := "const r = await tools.exec_command(" + string(cmd) + ");\ntext(r);\n"
		return openAIItem{Type: "custom_tool_call", ID: "ctc_1", CallID: "call_1", Name: "exec", Input: js, Status: "completed"}, nil
	}
	var args any
	var name string
	switch {
	case offered["shell_command"] != "":
		name, args = "shell_command", map[string]any{"command": script}
	case offered["exec_command"] != "":
		name, args = "exec_command", map[string]any{"cmd": script}
	case offered["shell"] != "":
		name, args = "shell", map[string]any{"command": []string{"bash", "-c", script}}
	case offered["bash"] != "": // OpenCode's
		name, args = "bash", map[string]any{"command": script, "description": "Run the script"}
	default:
		return openAIItem{}, fmt.Errorf("the request offers no shell tool (tools: %q)", names)
	}
	a, err := json.Marshal(args)
	if err != nil {
		return openAIItem{}, err
	}
	return openAIItem{Type: "function_call", ID: "fc_1", CallID: "call_1", Name: name, Arguments: string(a), Status: "completed"}, nil
}

// openAIToolCall builds a call of the offered tool whose name ends in
// suffix, with args; in Codex's code mode, JavaScript that calls the nested
// tool named suffix.
func openAIToolCall(in openAIInput, suffix string, args map[string]any) (openAIItem, error) {
	var names []string
	offered := map[string]string{} // name -> type
	var walk func([]openAITool)
	walk = func(ts []openAITool) {
		for _, t := range ts {
			if t.Type == "namespace" {
				walk(t.Tools)
				continue
			}
			names = append(names, t.Name)
			offered[t.Name] = t.Type
		}
	}
	walk(in.Tools)
	for _, it := range in.Input {
		walk(it.Tools)
	}
	a, err := json.Marshal(args)
	if err != nil {
		return openAIItem{}, err
	}
	for _, n := range names {
		if strings.HasSuffix(n, suffix) {
			return openAIItem{Type: "function_call", ID: "fc_1", CallID: "call_1", Name: n, Arguments: string(a), Status: "completed"}, nil
		}
	}
	if offered["exec"] == "custom" { // Codex's code mode: the tool is nested, by its full name
		js := "const r = await tools." + suffix + "(" + string(a) + ");\ntext(typeof r === \"string\" ? r : JSON.stringify(r));\n"
		return openAIItem{Type: "custom_tool_call", ID: "ctc_1", CallID: "call_1", Name: "exec", Input: js, Status: "completed"}, nil
	}
	return openAIItem{}, fmt.Errorf("the request offers no tool *%s (tools: %q)", suffix, names)
}

// openAIItem is one output item of a response.
type openAIItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Status    string          `json:"status,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   []openAIContent `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Input     string          `json:"input,omitempty"` // a custom tool's
}

// MarshalJSON writes a message's content always, empty or not (the client
// reads a message without one as no message).
func (it openAIItem) MarshalJSON() ([]byte, error) {
	type plain openAIItem
	if it.Type != "message" {
		return json.Marshal(plain(it))
	}
	content := it.Content
	if content == nil {
		content = []openAIContent{}
	}
	return json.Marshal(struct {
		plain
		Content []openAIContent `json:"content"`
	}{plain(it), content})
}

type openAIContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

// openAIStream writes the events of one response that outputs items, as
// the Responses API streams them: created, then per item added, its
// deltas and done, then completed with the usage.
func openAIStream(w io.Writer, model string, items []openAIItem) {
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		data, _ := json.Marshal(fields)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
	}
	response := func(status string, output []openAIItem, usage any) map[string]any {
		return map[string]any{"id": "resp_fake", "object": "response", "created_at": 1, "status": status,
			"model": model, "output": output, "usage": usage}
	}
	event("response.created", map[string]any{"response": response("in_progress", []openAIItem{}, nil)})
	event("response.in_progress", map[string]any{"response": response("in_progress", []openAIItem{}, nil)})
	for i, it := range items {
		started := it
		started.Status = "in_progress"
		started.Arguments, started.Input = "", ""
		if it.Type == "message" {
			started.Content = []openAIContent{}
		}
		event("response.output_item.added", map[string]any{"output_index": i, "item": started})
		switch it.Type {
		case "function_call":
			event("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": i, "delta": it.Arguments})
			event("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i, "arguments": it.Arguments})
		case "custom_tool_call":
			event("response.custom_tool_call_input.delta", map[string]any{"item_id": it.ID, "output_index": i, "delta": it.Input})
			event("response.custom_tool_call_input.done", map[string]any{"item_id": it.ID, "output_index": i, "input": it.Input})
		case "message":
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			event("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": part})
			for _, word := range strings.SplitAfter(it.Content[0].Text, " ") {
				event("response.output_text.delta", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "delta": word})
			}
			event("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "text": it.Content[0].Text})
			part["text"] = it.Content[0].Text
			event("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": part})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	usage := map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 120}
	event("response.completed", map[string]any{"response": response("completed", items, usage)})
}
