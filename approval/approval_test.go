package approval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/task"
)

var now = time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)

// spooled writes a request as the endpoint spools it and the entrypoint's
// requests prints it.
func spooled(id string, at time.Time, dest string, secs int64, reason string, answer string) string {
	s := fmt.Sprintf("request %s\nv 1\nid %s\ntime %d\nexpires %d\ndest %s\nseconds %d\nreason %x\n",
		id, id, at.Unix(), at.Add(10*time.Minute).Unix(), dest, secs, reason)
	if answer != "" {
		s += "answer\n" + answer
	}
	return s + "\n"
}

func TestMaxReasonAgrees(t *testing.T) {
	if firewall.RequestMaxReason != audit.MaxReason {
		t.Fatalf("the endpoint takes reasons of %d bytes, the audit log keeps %d", firewall.RequestMaxReason, audit.MaxReason)
	}
}

func TestParseStates(t *testing.T) {
	out := spooled("r000000000001", now.Add(-time.Minute), "docs.example.com:443", 1800, "read \x1b[2J docs", "") +
		spooled("r000000000002", now.Add(-11*time.Minute), "198.18.7.0/24:443", 60, "x", "") +
		spooled("r000000000003", now.Add(-time.Minute), "[2001:2::/48]:443,8443", 60, "x", fmt.Sprintf("state approved\nuntil %d\nnote \n", now.Unix()+60)) +
		spooled("r000000000004", now.Add(-time.Minute), "example.com:443", 60, "x", fmt.Sprintf("state denied\nuntil 0\nnote %x\n", "no")) +
		spooled("r000000000005", now.Add(-time.Minute), "example.com:443", 60, "x", fmt.Sprintf("state approved\nuntil 0\nnote %x\n", "in the policy"))
	reqs, err := Parse(out, "fix-1", now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.ID[11:]+" "+r.State+" "+r.Task+" "+r.Duration+" "+r.Note)
	}
	want := []string{"01 pending fix-1 30m ", "02 timed-out fix-1 1m ", "03 approved fix-1 1m ", "04 denied fix-1 1m no", "05 approved fix-1 1m in the policy"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("states %q, want %q", got, want)
	}
	if reqs[0].Reason != "read \x1b[2J docs" || reqs[2].Until == nil || reqs[2].Until.Unix() != now.Unix()+60 || reqs[2].Policy ||
		!reqs[4].Policy || reqs[4].Until != nil {
		t.Errorf("fields: %+v", reqs)
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	good := spooled("r000000000001", now, "example.com:443", 60, "x", "")
	for name, out := range map[string]string{
		"bad ID":      strings.Replace(good, "request r000000000001", "request r1", 1),
		"other ID":    strings.Replace(good, "id r000000000001", "id r000000000002", 1),
		"version":     strings.Replace(good, "v 1", "v 2", 1),
		"destination": strings.Replace(good, "dest example.com:443", "dest exa$mple.com", 1),
		"duration":    strings.Replace(good, "seconds 60", "seconds 0", 1),
		"too long":    strings.Replace(good, "seconds 60", fmt.Sprintf("seconds %d", firewall.GrantMaxSeconds+1), 1),
		"reason hex":  strings.Replace(good, "reason 78", "reason zz", 1),
		"no reason":   strings.Replace(good, "reason 78", "reason ", 1),
		"twice":       strings.Replace(good, "v 1\n", "v 1\nv 1\n", 1),
		"answer":      strings.TrimSuffix(good, "\n") + "answer\nstate granted\nuntil 0\nnote \n\n",
	} {
		if _, err := Parse(out, "", now); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// host is a Host on a small agentbox.yaml whose egresses hold out (task
// -> the requests' listing) and answer the commands in replies.
func host(t *testing.T, yaml string, out map[string]string, replies map[string]error) (*Host, *[]string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agentbox.yaml"), []byte("name: demo\nagent: none\n"+yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Loaded})
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	var calls []string
	p := &egress.Project{Dir: dir, Name: c.Config.Name, Config: c.Config,
		Egress: func(_ context.Context, _, task string, args ...string) (string, error) {
			if len(args) == 1 && args[0] == "requests" {
				o, ok := out[task]
				if !ok {
					return "", fmt.Errorf("no egress for %q", task)
				}
				return o, nil
			}
			key := task + ": " + strings.Join(args, " ")
			calls = append(calls, key)
			err, ok := replies[key]
			if !ok {
				t.Errorf("unexpected egress command %q", key)
			}
			return "", err
		},
		Profile:  func(context.Context, string, string) (string, error) { return "balanced", nil },
		AuditDir: func() (string, error) { return state, nil },
		User:     func() string { return "alice" },
		Now:      func() time.Time { return now },
	}
	h := &Host{P: p, Tasks: func() ([]string, error) { return []string{"fix-1", "gone"}, nil }}
	return h, &calls, filepath.Join(state, "demo.jsonl")
}

// TestApprove: approval grants exactly what allow would, in the task that
// asked, records the request's ID, reason and time, and tells the agent.
func TestApprove(t *testing.T) {
	asked := now.Add(-time.Minute)
	h, calls, log := host(t, "", map[string]string{
		"":      spooled("r0000000000aa", asked, "198.18.7.9/32:443", 600, "sandbox's", ""),
		"fix-1": spooled("r0000000000bb", asked, "docs.example.com:443,8443", 900, "read the docs", ""),
	}, map[string]error{
		"fix-1: grant-name docs.example.com 443,8443 300":                                      nil,
		fmt.Sprintf("fix-1: answer r0000000000bb approved %d ", now.Add(5*time.Minute).Unix()): nil,
	})
	reqs, skipped, err := h.List(t.Context())
	if err != nil || len(reqs) != 2 || len(skipped) != 1 || skipped[0].Task != "gone" {
		t.Fatalf("List: %v %v %v", reqs, skipped, err)
	}
	r, err := h.Approve(t.Context(), "r0000000000bb", "5m")
	if err != nil || r.State != Approved || !r.Until.Equal(now.Add(5*time.Minute)) {
		t.Fatalf("Approve: %+v %v", r, err)
	}
	if len(*calls) != 2 {
		t.Errorf("egress calls %q", *calls)
	}
	recs, err := audit.Read(log, time.Time{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	g := recs[0]
	if g.Event != audit.Grant || g.Task != "fix-1" || g.User != "alice" || g.Reason != "read the docs" || g.Request != "r0000000000bb" ||
		g.Asked == nil || !g.Asked.Equal(asked) || g.Seconds != 300 || g.Result != audit.OK {
		t.Errorf("audit record %+v", g)
	}
	// Answered: not again.
	h.P.Egress = func(_ context.Context, _, task string, args ...string) (string, error) {
		return spooled("r0000000000bb", asked, "docs.example.com:443", 900, "x", "state approved\nuntil 1\nnote \n"), nil
	}
	if _, err := h.Approve(t.Context(), "r0000000000bb", ""); err == nil || !strings.Contains(err.Error(), "is approved") {
		t.Errorf("approved twice: %v", err)
	}
}

// TestApproveRefused: a grant the profile refuses is no grant; the agent
// learns why, and the refusal is in the audit log. A timed-out request is
// not approved.
func TestApproveRefused(t *testing.T) {
	asked := now.Add(-time.Minute)
	note := "refused: --for 2h is over elevation.max_duration 1h (the default)"
	h, calls, log := host(t, "", map[string]string{
		"": spooled("r0000000000aa", asked, "198.18.7.9/32:443", 7200, "long", "") +
			spooled("r0000000000cc", now.Add(-20*time.Minute), "198.18.7.9/32:443", 60, "old", ""),
	}, map[string]error{
		fmt.Sprintf(": answer r0000000000aa denied 0 %x", note): nil,
	})
	if _, err := h.Approve(t.Context(), "r0000000000aa", ""); err == nil || !strings.Contains(err.Error(), "over elevation.max_duration") {
		t.Fatalf("Approve: %v", err)
	}
	if _, err := h.Approve(t.Context(), "r0000000000cc", ""); err == nil || !strings.Contains(err.Error(), "is timed-out") {
		t.Errorf("a timed-out request: %v", err)
	}
	if _, err := h.Approve(t.Context(), "r0000000000dd", ""); err == nil || !strings.Contains(err.Error(), "no request r0000000000dd") {
		t.Errorf("an unknown request: %v", err)
	}
	if _, err := h.Approve(t.Context(), "../x", ""); err == nil || !strings.Contains(err.Error(), "invalid request ID") {
		t.Errorf("a bad ID: %v", err)
	}
	if len(*calls) != 1 {
		t.Errorf("egress calls %q", *calls)
	}
	recs, _ := audit.Read(log, time.Time{}) // the timed-out request's, seen first, and the refused grant
	if len(recs) != 2 || recs[0].Event != audit.TimedOut || recs[0].Request != "r0000000000cc" ||
		recs[1].Result == audit.OK || recs[1].Request != "r0000000000aa" {
		t.Errorf("audit %+v", recs)
	}
}

func TestDeny(t *testing.T) {
	asked := now.Add(-time.Minute)
	h, calls, log := host(t, "", map[string]string{
		"fix-1": spooled("r0000000000bb", asked, "docs.example.com:443", 900, "read the docs", ""),
	}, map[string]error{
		fmt.Sprintf("fix-1: answer r0000000000bb denied 0 %x", "use the mirror"): nil,
	})
	r, err := h.Deny(t.Context(), "r0000000000bb", "  use the mirror ")
	if err != nil || r.State != Denied || r.Note != "use the mirror" {
		t.Fatalf("Deny: %+v %v", r, err)
	}
	recs, _ := audit.Read(log, time.Time{})
	if len(*calls) != 1 || len(recs) != 1 || recs[0].Event != audit.Deny || recs[0].Note != "use the mirror" ||
		recs[0].Reason != "read the docs" || recs[0].Task != "fix-1" || recs[0].User != "alice" || recs[0].Result != audit.OK {
		t.Errorf("calls %q, audit %+v", *calls, recs)
	}
}

// TestLocalTasks: the requests of the running tasks are asked for, on
// this machine and on a cluster alike (p.Egress reaches a pod's egress);
// ended tasks have none.
func TestLocalTasks(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, rec := range []*task.Record{
		{Name: "here", State: task.StateRunning},
		{Name: "cluster", On: task.OnKubernetes, Pod: "pod1", State: task.StateRunning},
		{Name: "ended", State: task.StateExited},
	} {
		if err := rec.Write("acme"); err != nil {
			t.Fatal(err)
		}
	}
	names, err := Local(&egress.Project{Name: "acme"}).Tasks()
	slices.Sort(names)
	if err != nil || strings.Join(names, ",") != "cluster,here" {
		t.Errorf("tasks asked: %q, %v", names, err)
	}
}

// TestTimedOutAudited: a request seen timed out (by requests, watch,
// approve, deny or audit: List) goes to the audit log once, at its
// expiry, with its ID, time, destination and the agent's reason; no
// person decided it (no user).
func TestTimedOutAudited(t *testing.T) {
	asked := now.Add(-20 * time.Minute)
	h, calls, log := host(t, "", map[string]string{
		"fix-1": spooled("r0000000000ee", asked, "docs.example.com:443", 900, "read the docs", "") +
			spooled("r0000000000ff", now.Add(-time.Minute), "docs.example.com:443", 900, "still waits", ""),
	}, nil)
	for range 2 {
		if _, _, err := h.List(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	again := *h // another agentbox process: the log says it is recorded
	if _, _, err := again.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs, err := audit.Read(log, time.Time{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records %+v: %v", len(recs), recs, err)
	}
	r := recs[0]
	if r.Event != audit.TimedOut || r.Request != "r0000000000ee" || !r.Time.Equal(asked.Add(10*time.Minute)) || r.Asked == nil ||
		!r.Asked.Equal(asked) || r.Task != "fix-1" || r.Dest != "docs.example.com" || len(r.Ports) != 1 || r.Ports[0] != 443 ||
		r.Seconds != 900 || r.Reason != "read the docs" || r.User != "" || r.Result != audit.OK || len(*calls) != 0 {
		t.Errorf("audit record %+v, egress calls %q", r, *calls)
	}
}

// TestApproveConcurrent: two approvals of one request at the same moment
// (two agentbox processes; goroutines here, each with its own Host) grant
// once; the other is told the request is answered.
func TestApproveConcurrent(t *testing.T) {
	asked := now.Add(-time.Minute)
	h, _, _ := host(t, "", nil, nil)
	var mu sync.Mutex
	var answer string
	grants := 0
	h.P.Egress = func(_ context.Context, _, task string, args ...string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case args[0] == "requests":
			return spooled("r0000000000aa", asked, "198.18.7.9/32:443", 600, "x", answer), nil
		case args[0] == "grant":
			grants++
			mu.Unlock()
			time.Sleep(50 * time.Millisecond) // the other approval's window
			mu.Lock()
			return "", nil
		case args[0] == "answer":
			answer = fmt.Sprintf("state %s\nuntil %s\nnote %s\n", args[2], args[3], args[4])
			return "", nil
		}
		t.Errorf("unexpected egress command %q", args)
		return "", nil
	}
	errs := make(chan error, 2)
	for range 2 {
		other := *h
		go func() {
			_, err := other.Approve(t.Context(), "r0000000000aa", "")
			errs <- err
		}()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || grants != 1 {
		t.Fatalf("two approvals: %v and %v, %d grants", e1, e2, grants)
	}
	if err := errors.Join(e1, e2); !strings.Contains(err.Error(), "request r0000000000aa is approved") {
		t.Errorf("the second approval's error: %v", err)
	}
}
