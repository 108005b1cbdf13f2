// Package fakemodel serves scripted fakes of the model APIs that the agent
// CLIs speak, each in its provider's real streaming protocol, for tests that
// run a real CLI against a model the test controls. Each fake plays one short
// script: its first answer asks the agent, through the CLI's own tool calling,
// to run a shell command (a file edit and a git commit); once the tool's result
// comes back, it answers with a final text. Every request is recorded (method,
// path, headers, body) so that a test can check which key reached the model
// and what else the CLI asked for.
//
// The fakes are http.Handlers: a test serves them on loopback with httptest,
// or on a network of its own for a sandboxed CLI. They never reach a real API.
package fakemodel
