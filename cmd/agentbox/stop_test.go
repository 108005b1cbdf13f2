package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/task"
)

// TestStopExitCode: agentbox stop exits 0 when it stopped the task, whatever
// the task's own code, which stays in the summary (130 for a stopped task);
// 3 when fetch's checks refused the task's branch.
func TestStopExitCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		sum  task.Summary
		code int
	}{
		{"stopped", task.Summary{Task: "fix-1", State: task.StateStopped, ExitCode: task.ExitStopped, BranchStatus: "new"}, exitOK},
		{"had ended on its own, failing", task.Summary{Task: "fix-1", State: task.StateExited, ExitCode: 2, BranchStatus: "new"}, exitOK},
		{"timed out", task.Summary{Task: "fix-1", State: task.StateTimedOut, ExitCode: task.ExitTimedOut, BranchStatus: task.BranchEmpty}, exitOK},
		{"branch refused", task.Summary{Task: "fix-1", State: task.StateStopped, ExitCode: task.ExitStopped, BranchStatus: "refused"}, task.ExitBranchRefused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				var out, errs bytes.Buffer
				sum := tt.sum
				err := reportStop(&sum, asJSON, &out, &errs)
				code := exitOK
				var ee *exitErr
				if errors.As(err, &ee) {
					code = ee.code
				} else if err != nil {
					t.Fatal(err)
				}
				if code != tt.code {
					t.Errorf("json %v: exit %d, want %d", asJSON, code, tt.code)
				}
				if !asJSON {
					if !strings.Contains(errs.String(), "agentbox: task fix-1 "+tt.sum.State) {
						t.Errorf("summary: %q", errs.String())
					}
					continue
				}
				var got task.Summary
				if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.ExitCode != tt.sum.ExitCode || got.State != tt.sum.State {
					t.Errorf("json summary %+v (%v), want the task's state %s and code %d", got, err, tt.sum.State, tt.sum.ExitCode)
				}
			}
		})
	}
}
