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

// AnthropicToolUseID is the id of the one tool call the Anthropic fake makes.
const AnthropicToolUseID = "toolu_agentbox_fake_01"

// AnthropicFinalText is the fake's last answer, after the tool's result.
const AnthropicFinalText = "The file is written and committed."

// AnthropicRequest is one request the Anthropic fake received.
type AnthropicRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Anthropic is a scripted fake of the Anthropic Messages API
// (POST /v1/messages, streamed as server-sent events or not, and
// /v1/messages/count_tokens). A request that offers the tool Tool and carries
// no result of the fake's tool call is answered with that tool call, its input
// {"command": Command}; a request carrying the result is answered with
// AnthropicFinalText; any other message (a CLI's side requests: titles,
// summaries, a quota check) gets a short text. Every request is recorded.
type Anthropic struct {
	Tool    string // the CLI's shell tool, "Bash" for Claude Code
	Command string
	// Input, when not nil, is the tool call's input instead of Command's
	// (another tool than the shell: an MCP server's).
	Input map[string]any

	mu   sync.Mutex
	reqs []AnthropicRequest
}

// NewAnthropic returns a fake that asks Claude Code's Bash tool to run command.
func NewAnthropic(command string) *Anthropic {
	return &Anthropic{Tool: "Bash", Command: command}
}

// Requests returns a copy of the requests received so far, in order.
func (a *Anthropic) Requests() []AnthropicRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]AnthropicRequest(nil), a.reqs...)
}

// ToolResults returns the text of every result of the fake's tool call that
// the CLI sent back, in order.
func (a *Anthropic) ToolResults() []string {
	var out []string
	for _, r := range a.Requests() {
		var req anthropicMessagesRequest
		if r.Path != "/v1/messages" || json.Unmarshal(r.Body, &req) != nil {
			continue
		}
		if res, ok := req.toolResult(); ok {
			out = append(out, res)
		}
	}
	return out
}

// anthropicMessagesRequest is the part of a Messages request the fake reads.
type anthropicMessagesRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string or a list of blocks
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a string or a list of text blocks
	Text      string          `json:"text"`
}

// toolResult returns the text of the result of the fake's tool call, if the
// request carries one.
func (r anthropicMessagesRequest) toolResult() (string, bool) {
	for _, m := range r.Messages {
		var blocks []anthropicBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type != "tool_result" || b.ToolUseID != AnthropicToolUseID {
				continue
			}
			var s string
			if json.Unmarshal(b.Content, &s) == nil {
				return s, true
			}
			var parts []anthropicBlock
			_ = json.Unmarshal(b.Content, &parts)
			var text []string
			for _, p := range parts {
				text = append(text, p.Text)
			}
			return strings.Join(text, "\n"), true
		}
	}
	return "", false
}

func (r anthropicMessagesRequest) offers(tool string) bool {
	for _, t := range r.Tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}

// ServeHTTP answers one request of the Messages API.
func (a *Anthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.reqs = append(a.reqs, AnthropicRequest{r.Method, r.URL.Path, r.Header.Clone(), body})
	a.mu.Unlock()

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		a.messages(w, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		anthropicJSON(w, http.StatusOK, map[string]int{"input_tokens": len(body)/4 + 1})
	default:
		anthropicError(w, http.StatusNotFound, "not_found_error", "the fake serves no "+r.Method+" "+r.URL.Path)
	}
}

func (a *Anthropic) messages(w http.ResponseWriter, body []byte) {
	var req anthropicMessagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "decoding the request: "+err.Error())
		return
	}
	var blocks []map[string]any
	stop := "end_turn"
	switch _, done := req.toolResult(); {
	case done:
		blocks = []map[string]any{{"type": "text", "text": AnthropicFinalText}}
	case req.offers(a.Tool):
		stop = "tool_use"
		var input any = map[string]string{"command": a.Command, "description": "Write the file and commit it"}
		if a.Input != nil {
			input = a.Input
		}
		blocks = []map[string]any{
			{"type": "text", "text": "I will write the file and commit it."},
			{"type": "tool_use", "id": AnthropicToolUseID, "name": a.Tool, "input": input},
		}
	default:
		blocks = []map[string]any{{"type": "text", "text": "OK"}}
	}
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	if !req.Stream {
		anthropicJSON(w, http.StatusOK, map[string]any{
			"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": len(body)/4 + 1, "output_tokens": 20},
		})
		return
	}
	anthropicStream(w, model, len(body)/4+1, blocks, stop)
}

// anthropicStream writes the answer as the Messages API streams it:
// message_start, per block content_block_start / _delta / _stop (a tool's
// input as input_json_delta fragments), message_delta with the stop reason,
// message_stop.
func anthropicStream(w http.ResponseWriter, model string, inTokens int, blocks []map[string]any, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var buf bytes.Buffer
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": inTokens, "output_tokens": 1},
	}})
	event("ping", map[string]string{"type": "ping"})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]string{"type": "text", "text": ""}})
			for _, part := range anthropicSplit(b["text"].(string)) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]string{"type": "text_delta", "text": part}})
			}
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			input, _ := json.Marshal(b["input"])
			for _, part := range anthropicSplit(string(input)) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]string{"type": "input_json_delta", "partial_json": part}})
			}
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 20}})
	event("message_stop", map[string]string{"type": "message_stop"})
	_, _ = w.Write(buf.Bytes())
}

// anthropicSplit cuts s into a few fragments, as a stream delivers it.
func anthropicSplit(s string) []string {
	const n = 24
	var parts []string
	for len(s) > n {
		parts = append(parts, s[:n])
		s = s[n:]
	}
	return append(parts, s)
}

func anthropicJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func anthropicError(w http.ResponseWriter, code int, typ, msg string) {
	anthropicJSON(w, code, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}
