package approval

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/generator"
)

// policyHost is a generated project whose sandbox runs balanced and whose
// egresses hold out's requests (by task); its egress takes the policy's
// live change and the answer, which calls records.
func policyHost(t *testing.T, out map[string]string) (*Host, *[]string, string) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	lock, err := os.ReadFile("../testdata/golden/agent-none/agentbox.lock")
	if err != nil {
		t.Fatal(err)
	}
	yaml := "name: demo\nagent: none\nnetwork:\n  domains: [api.example.com]\n"
	for name, data := range map[string][]byte{"agentbox.yaml": []byte(yaml), "agentbox.lock": lock} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := generator.Compile(dir, generator.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generator.Write(dir, c.Files); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	var calls []string
	p := &egress.Project{Dir: dir, Name: c.Config.Name, Config: c.Config,
		Egress: func(_ context.Context, _, task string, args ...string) (string, error) {
			if len(args) == 1 && args[0] == "requests" {
				return out[task], nil
			}
			calls = append(calls, task+": "+strings.Join(args, " "))
			return "", nil
		},
		Profile:  func(context.Context, string, string) (string, error) { return "balanced", nil },
		AuditDir: func() (string, error) { return state, nil },
		User:     func() string { return "alice" },
		Now:      func() time.Time { return now },
	}
	h := &Host{P: p, Tasks: func() ([]string, error) { return []string{"fix-1"}, nil }}
	return h, &calls, filepath.Join(state, "demo.jsonl")
}

// TestApproveIntoPolicy: "add to the policy" instead of a grant is policy
// add: agentbox.yaml lists the destination on its port, the running
// sandbox takes it live without an end, the audit record names the
// request, and the agent learns: approved, no end.
func TestApproveIntoPolicy(t *testing.T) {
	asked := now.Add(-time.Minute)
	h, calls, log := policyHost(t, map[string]string{
		"": spooled("r0000000000aa", asked, "docs.example.com:8443", 600, "read the docs", ""),
	})
	r, res, err := h.ApproveIntoPolicy(t.Context(), "r0000000000aa")
	if err != nil {
		t.Fatal(err)
	}
	note := "added to agentbox.yaml's allowlist (profile balanced): no end"
	if r.State != Approved || !r.Policy || r.Until != nil || r.Note != note || len(res.Files) == 0 {
		t.Errorf("request %+v, files %v", r, res.Files)
	}
	if got := r.Answered(); got != "approved r0000000000aa: docs.example.com:8443 for the sandbox: "+note {
		t.Errorf("answered %q", got)
	}
	want := []string{": grant-name docs.example.com 8443 0", ": answer r0000000000aa approved 0 " + hex.EncodeToString([]byte(note))}
	if strings.Join(*calls, "|") != strings.Join(want, "|") {
		t.Errorf("egress ran %q, want %q", *calls, want)
	}
	yaml, err := os.ReadFile(filepath.Join(h.P.Dir, "agentbox.yaml"))
	if err != nil || !strings.Contains(string(yaml), "docs.example.com") || !strings.Contains(string(yaml), "8443") {
		t.Errorf("agentbox.yaml after the approval:\n%s", yaml)
	}
	recs, err := audit.Read(log, time.Time{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	if rec := recs[0]; rec.Event != audit.PolicyAdd || rec.Request != "r0000000000aa" || rec.Reason != "read the docs" ||
		rec.Asked == nil || !rec.Asked.Equal(asked.Truncate(time.Second)) || rec.User != "alice" {
		t.Errorf("the audit record: %+v", rec)
	}
}

// TestApproveIntoPolicyRefused: a task's request (the task runs the files
// it started with), a destination the allowlist has already, and a
// request answered already stay as they were: no edit, no answer.
func TestApproveIntoPolicyRefused(t *testing.T) {
	approved := "state approved\nuntil 0\nnote \n"
	for _, tc := range []struct {
		name, task, dest, answer, want string
	}{
		{"a task's", "fix-1", "docs.example.com:443", "", "task fix-1's"},
		{"listed already", "", "api.example.com:443", "", "api.example.com is there already"},
		{"answered", "", "docs.example.com:443", approved, "is approved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, calls, _ := policyHost(t, map[string]string{
				tc.task: spooled("r0000000000bb", now.Add(-time.Minute), tc.dest, 600, "x", tc.answer),
			})
			before, _ := os.ReadFile(filepath.Join(h.P.Dir, "agentbox.yaml"))
			_, _, err := h.ApproveIntoPolicy(t.Context(), "r0000000000bb")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			after, _ := os.ReadFile(filepath.Join(h.P.Dir, "agentbox.yaml"))
			if string(after) != string(before) || len(*calls) != 0 {
				t.Errorf("changed: agentbox.yaml %v, egress ran %q", string(after) != string(before), *calls)
			}
		})
	}
}
