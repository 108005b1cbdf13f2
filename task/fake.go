package task

import (
	"context"
	"fmt"
	"io"
	"time"
)

// TB is the part of testing.TB the Fake reports through.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Fake is a Backend for tests of the course: each method answers from a
// map of method name to the answers it was told to give, in order, and a
// call it was not told to expect fails the test at once. Answers:
//
//	Start, Remove, Logs:  error (nil for success)
//	Follow:               bool (stopped)
//	Agent:                *AgentState, or an error
//	Stop:                 nil
//	Collect:              func(*Summary, bool), which fills the summary
//
// Calls records the methods called, in order.
type Fake struct {
	T       TB
	Answers map[string][]any
	Calls   []string
	// Stdout is what Follow writes to its stdout.
	Stdout string
	// SlackAnswer is what Slack answers.
	SlackAnswer time.Duration
}

// NewFake returns a Fake that expects no call yet.
func NewFake(t TB) *Fake { return &Fake{T: t, Answers: map[string][]any{}} }

// On adds answers to method's.
func (f *Fake) On(method string, answers ...any) *Fake {
	f.Answers[method] = append(f.Answers[method], answers...)
	return f
}

// Done fails the test when an answer was not asked for.
func (f *Fake) Done() {
	f.T.Helper()
	for m, a := range f.Answers {
		if len(a) > 0 {
			f.T.Fatalf("fake backend: %d answers of %s never asked for (calls: %v)", len(a), m, f.Calls)
		}
	}
}

func (f *Fake) next(method string) any {
	f.T.Helper()
	f.Calls = append(f.Calls, method)
	q := f.Answers[method]
	if len(q) == 0 {
		f.T.Fatalf("fake backend: unexpected call of %s (calls: %v)", method, f.Calls)
		panic("unreachable: Fatalf returned")
	}
	f.Answers[method] = q[1:]
	return q[0]
}

func (f *Fake) err(method string) error {
	f.T.Helper()
	a := f.next(method)
	if a == nil {
		return nil
	}
	err, ok := a.(error)
	if !ok {
		f.T.Fatalf("fake backend: %s's answer %#v is not an error", method, a)
	}
	return err
}

// Start answers an error.
func (f *Fake) Start(context.Context) error { return f.err("Start") }

// Follow writes Stdout and answers stopped.
func (f *Fake) Follow(_ context.Context, stdout, _ io.Writer) bool {
	f.T.Helper()
	stopped, ok := f.next("Follow").(bool)
	if !ok {
		f.T.Fatalf("fake backend: Follow's answer is not a bool")
	}
	_, _ = io.WriteString(stdout, f.Stdout)
	return stopped
}

// Agent answers a state or an error.
func (f *Fake) Agent(context.Context) (*AgentState, error) {
	f.T.Helper()
	switch a := f.next("Agent").(type) {
	case *AgentState:
		return a, nil
	case error:
		return nil, a
	case nil:
		return nil, nil
	default:
		f.T.Fatalf("fake backend: Agent's answer %#v is neither *AgentState nor error", a)
		return nil, nil
	}
}

// Stop takes its answer, nil.
func (f *Fake) Stop(context.Context) {
	f.T.Helper()
	if a := f.next("Stop"); a != nil {
		f.T.Fatalf("fake backend: Stop's answer %#v is not nil", a)
	}
}

// Collect runs its answer on sum.
func (f *Fake) Collect(_ context.Context, sum *Summary, timedOut bool) {
	f.T.Helper()
	fill, ok := f.next("Collect").(func(*Summary, bool))
	if !ok {
		f.T.Fatalf("fake backend: Collect's answer is not a func(*Summary, bool)")
	}
	fill(sum, timedOut)
}

// Slack answers SlackAnswer; it is a property, not a call to expect.
func (f *Fake) Slack() time.Duration { return f.SlackAnswer }

// Logs answers an error.
func (f *Fake) Logs(_ context.Context, l Logs, stdout, _ io.Writer) error {
	f.T.Helper()
	err := f.err("Logs")
	if err == nil {
		_, _ = fmt.Fprint(stdout, f.Stdout)
	}
	return err
}

// Remove answers an error.
func (f *Fake) Remove(context.Context) error { return f.err("Remove") }
