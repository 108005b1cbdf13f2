package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Gemini is a scripted fake of the Gemini API (generativelanguage, v1beta),
// as Gemini CLI calls it: generateContent, streamGenerateContent (SSE with
// alt=sse) and countTokens under /v1beta/models/{model}. Its answers follow
// a script: the n-th answer that continues the agent's conversation is step
// n, where n is the number of the model's turns with function calls already
// in the conversation. Requests it does not know get 404 with a message
// naming them, so that a CLI calling something new fails loudly.
type Gemini struct {
	steps []GeminiStep

	mu       sync.Mutex
	requests []GeminiRequest
}

// GeminiStep is one answer: the function calls the model makes, or, when
// there are none, its final text.
type GeminiStep struct {
	Calls []GeminiCall
	Text  string
}

// GeminiCall is one functionCall part: a tool of the CLI and its arguments.
type GeminiCall struct {
	Name string
	Args map[string]any
}

// GeminiRequest is what the fake received.
type GeminiRequest struct {
	Method, Path string
	Model        string // from the path
	Action       string // generateContent, streamGenerateContent, countTokens
	// Key is the API key: the x-goog-api-key header, else the key parameter.
	Key  string
	Body []byte
	// Step is the script's step the fake answered with; -1 when it did not
	// answer from the script.
	Step int
	// FunctionResponses are the functionResponse parts of the conversation
	// the request carries, in order.
	FunctionResponses []GeminiFunctionResponse
}

// GeminiFunctionResponse is a tool's result as the CLI reports it.
type GeminiFunctionResponse struct {
	Name     string
	Response json.RawMessage
}

// NewGemini returns a fake that answers with steps, in order.
func NewGemini(steps ...GeminiStep) *Gemini {
	return &Gemini{steps: steps}
}

// Requests returns the requests received so far.
func (g *Gemini) Requests() []GeminiRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GeminiRequest(nil), g.requests...)
}

// geminiPart is the subset of the API's Part the fake reads and writes.
type geminiPart struct {
	Text             string          `json:"text,omitempty"`
	FunctionCall     *geminiFuncCall `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiFuncCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiBody struct {
	Contents         []geminiContent `json:"contents"`
	GenerationConfig *struct {
		ResponseMIMEType   string        `json:"responseMimeType"`
		ResponseJSONSchema *geminiSchema `json:"responseJsonSchema"`
		ResponseSchema     *geminiSchema `json:"responseSchema"`
	} `json:"generationConfig"`
}

func (g *Gemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := GeminiRequest{Method: r.Method, Path: r.URL.Path, Body: body, Step: -1}
	req.Key = r.Header.Get("x-goog-api-key")
	if req.Key == "" {
		req.Key = r.URL.Query().Get("key")
	}
	req.Model, req.Action = geminiRoute(r.URL.Path)
	var parsed geminiBody
	if req.Action != "" {
		if err := json.Unmarshal(body, &parsed); err != nil {
			g.record(req)
			geminiError(w, http.StatusBadRequest, "decoding the request: "+err.Error())
			return
		}
		req.FunctionResponses = geminiResponses(parsed.Contents)
	}
	switch {
	case r.Method != http.MethodPost || req.Action == "":
		g.record(req)
		geminiError(w, http.StatusNotFound, fmt.Sprintf("the fake Gemini API does not serve %s %s", r.Method, r.URL.Path))
	case req.Action == "countTokens":
		g.record(req)
		// About four bytes a token, as the API's own estimate goes.
		geminiWrite(w, "application/json", []byte(fmt.Sprintf(`{"totalTokens":%d}`, len(body)/4)))
	default:
		if gc := parsed.GenerationConfig; gc != nil && gc.ResponseMIMEType == "application/json" {
			// The CLI's own questions (which model to route to, ...):
			// the least value the schema allows.
			g.record(req)
			schema := gc.ResponseJSONSchema
			if schema == nil {
				schema = gc.ResponseSchema
			}
			b, err := json.Marshal(schema.least())
			if err != nil {
				geminiError(w, http.StatusInternalServerError, err.Error())
				return
			}
			g.answer(w, r, req, []geminiPart{{Text: string(b)}})
			return
		}
		req.Step = geminiStepOf(parsed.Contents)
		g.record(req)
		g.answer(w, r, req, g.script(req.Step))
	}
}

func (g *Gemini) record(req GeminiRequest) {
	g.mu.Lock()
	g.requests = append(g.requests, req)
	g.mu.Unlock()
}

// geminiRoute splits /v1beta/models/{model}:{action}.
func geminiRoute(path string) (model, action string) {
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		return "", ""
	}
	model, action, ok = strings.Cut(rest, ":")
	if !ok || model == "" {
		return "", ""
	}
	switch action {
	case "generateContent", "streamGenerateContent", "countTokens":
		return model, action
	}
	return "", ""
}

// geminiStepOf counts the model's turns with function calls.
func geminiStepOf(contents []geminiContent) int {
	n := 0
	for _, c := range contents {
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				n++
				break
			}
		}
	}
	return n
}

func geminiResponses(contents []geminiContent) []GeminiFunctionResponse {
	var out []GeminiFunctionResponse
	for _, c := range contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				out = append(out, GeminiFunctionResponse{p.FunctionResponse.Name, p.FunctionResponse.Response})
			}
		}
	}
	return out
}

// script returns the parts of step n, or of the last step once the script is
// done.
func (g *Gemini) script(n int) []geminiPart {
	if len(g.steps) == 0 {
		return []geminiPart{{Text: "(the fake Gemini API has no script)"}}
	}
	step := g.steps[min(n, len(g.steps)-1)]
	var parts []geminiPart
	for _, c := range step.Calls {
		parts = append(parts, geminiPart{FunctionCall: &geminiFuncCall{Name: c.Name, Args: c.Args}})
	}
	if len(step.Calls) == 0 {
		parts = append(parts, geminiPart{Text: step.Text})
	}
	return parts
}

// answer writes parts as the model's answer: as one JSON object (generateContent), as server-sent events
// (streamGenerateContent?alt=sse) or as a JSON array of chunks.
func (g *Gemini) answer(w http.ResponseWriter, r *http.Request, req GeminiRequest, parts []geminiPart) {
	b, err := json.Marshal(map[string]any{
		"candidates": []any{map[string]any{
			"content":      geminiContent{Role: "model", Parts: parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  req.Model,
	})
	if err != nil {
		geminiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	switch {
	case req.Action == "generateContent":
		geminiWrite(w, "application/json", b)
	case r.URL.Query().Get("alt") == "sse":
		geminiWrite(w, "text/event-stream", []byte("data: "+string(b)+"\r\n\r\n"))
	default:
		geminiWrite(w, "application/json", []byte("["+string(b)+"]"))
	}
}

func geminiWrite(w http.ResponseWriter, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(b)
}

// geminiError answers in the API's error shape.
func geminiError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": http.StatusText(code)}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// geminiSchema is the subset of a JSON schema (or the API's OpenAPI-style
// Schema, whose types are upper case) that the fake answers.
type geminiSchema struct {
	Type       string                   `json:"type"`
	Properties map[string]*geminiSchema `json:"properties"`
	Items      *geminiSchema            `json:"items"`
	Enum       []any                    `json:"enum"`
	Minimum    *float64                 `json:"minimum"`
}

// least returns the simplest value of the schema: the first of an enum, the
// minimum of a number (1 without one), an empty string or list, every property of an
// object.
func (s *geminiSchema) least() any {
	if s == nil {
		return map[string]any{}
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch strings.ToLower(s.Type) {
	case "object":
		obj := map[string]any{}
		for name, p := range s.Properties {
			obj[name] = p.least()
		}
		return obj
	case "array":
		return []any{}
	case "number", "integer":
		if s.Minimum != nil {
			return *s.Minimum
		}
		return 1 // scores and counts start at 1 more often than at 0
	case "boolean":
		return false
	case "string":
		return "fake"
	}
	return nil
}
