package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Chat is a scripted fake of an OpenAI-compatible Chat Completions API
// (POST {base}/chat/completions, streamed as server-sent events or not), as
// Copilot CLI calls a custom provider (COPILOT_PROVIDER_BASE_URL, type
// "openai"). The n-th answer is step n, where n is the number of assistant
// messages with tool calls already in the conversation. Other requests get
// 404 with a message naming them.
type Chat struct {
	steps []ChatStep

	mu       sync.Mutex
	requests []ChatRequest
}

// ChatStep is one answer: tool calls, or, when there are none, the final
// text.
type ChatStep struct {
	Calls []ChatCall
	Text  string
}

// ChatCall is one tool call: a tool of the CLI and its arguments.
type ChatCall struct {
	Name string
	Args map[string]any
}

// ChatRequest is what the fake received.
type ChatRequest struct {
	Method, Path string
	// Authorization is the header as sent ("Bearer KEY").
	Authorization string
	Model         string
	Stream        bool
	Body          []byte
	Step          int // -1 when not answered from the script
	// ToolResults are the contents of the conversation's tool messages.
	ToolResults []string
}

// NewChat returns a fake that answers with steps, in order.
func NewChat(steps ...ChatStep) *Chat { return &Chat{steps: steps} }

// Requests returns the requests received so far.
func (c *Chat) Requests() []ChatRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ChatRequest(nil), c.requests...)
}

type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

func (c *Chat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := ChatRequest{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: body, Step: -1}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		c.record(req)
		chatError(w, http.StatusNotFound, fmt.Sprintf("the fake Chat Completions API does not serve %s %s", r.Method, r.URL.Path))
		return
	}
	var parsed struct {
		Model    string        `json:"model"`
		Stream   bool          `json:"stream"`
		Messages []chatMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &parsed); err != nil {
		c.record(req)
		chatError(w, http.StatusBadRequest, "decoding the request: "+err.Error())
		return
	}
	req.Model, req.Stream, req.Step = parsed.Model, parsed.Stream, 0
	for _, m := range parsed.Messages {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			req.Step++
		case m.Role == "tool":
			var s string
			if json.Unmarshal(m.Content, &s) != nil {
				s = string(m.Content)
			}
			req.ToolResults = append(req.ToolResults, s)
		}
	}
	c.record(req)
	c.answer(w, req)
}

func (c *Chat) record(req ChatRequest) {
	c.mu.Lock()
	c.requests = append(c.requests, req)
	c.mu.Unlock()
}

// answer writes step req.Step (the last step once the script is done).
func (c *Chat) answer(w http.ResponseWriter, req ChatRequest) {
	step := ChatStep{Text: "(the fake Chat Completions API has no script)"}
	if len(c.steps) > 0 {
		step = c.steps[min(req.Step, len(c.steps)-1)]
	}
	msg := map[string]any{"role": "assistant", "content": step.Text}
	finish := "stop"
	if len(step.Calls) > 0 {
		var calls []map[string]any
		for i, call := range step.Calls {
			args, err := json.Marshal(call.Args)
			if err != nil {
				chatError(w, http.StatusInternalServerError, err.Error())
				return
			}
			calls = append(calls, map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", req.Step, i), "type": "function",
				"function": map[string]any{"name": call.Name, "arguments": string(args)}})
		}
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}
		finish = "tool_calls"
	}
	id := fmt.Sprintf("chatcmpl-fake-%d", req.Step)
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return
	}
	// Streamed: the whole message as one delta, then the finish reason and
	// the usage, then [DONE].
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(choices []any, extra map[string]any) {
		m := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": req.Model, "choices": choices}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk([]any{map[string]any{"index": 0, "delta": msg, "finish_reason": nil}}, nil)
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	chunk([]any{}, map[string]any{"usage": usage})
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

// chatError answers in OpenAI's error shape.
func chatError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
