package egress

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/generator"
)

// project is a Project on a small agentbox.yaml whose egress answers from
// replies ("task: args"); an unknown command fails the test.
func project(t *testing.T, yaml string, replies map[string]error) (*Project, *[]string, string) {
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
	p := &Project{Dir: dir, Name: c.Config.Name, Config: c.Config,
		Egress: func(_ context.Context, _, task string, args ...string) (string, error) {
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
	return p, &calls, filepath.Join(state, "demo.jsonl")
}

// TestAllow: a grant is one call (what allow and an approval make): the
// egress gets it, the audit log records it, refused or not.
func TestAllow(t *testing.T) {
	p, calls, log := project(t, "", map[string]error{
		"fix-1: grant-name docs.example.com 443,8443 900": nil,
		": grant 198.18.7.0/24 443 60":                    errors.New("nft: no such set"),
	})
	d, _ := ParseDest("docs.example.com:443,8443")
	exp, err := p.Allow(t.Context(), "fix-1", Request{Dest: d, For: 15 * time.Minute, Reason: "docs"})
	if err != nil || !exp.Equal(now.Add(15*time.Minute)) {
		t.Fatalf("Allow: %v, %v", exp, err)
	}
	d, _ = ParseDest("198.18.7.0/24")
	if _, err := p.Allow(t.Context(), "", Request{Dest: d, For: time.Minute, Reason: "fixtures"}); err == nil ||
		err.Error() != "granting 198.18.7.0/24: nft: no such set" {
		t.Errorf("a failed grant: %v", err)
	}
	d, _ = ParseDest("10.0.0.0/8")
	if _, err := p.Allow(t.Context(), "", Request{Dest: d, For: time.Minute, Reason: "private"}); err == nil ||
		!strings.HasPrefix(err.Error(), "refusing to grant: ") {
		t.Errorf("a private range: %v", err)
	}
	if _, err := p.Allow(t.Context(), "", Request{Dest: d, For: 2 * time.Hour, Reason: "long"}); err == nil ||
		!strings.Contains(err.Error(), "over elevation.max_duration") {
		t.Errorf("over the maximum: %v", err)
	}
	if len(*calls) != 2 {
		t.Errorf("egress calls %q", *calls)
	}
	recs, err := audit.Read(log, time.Time{})
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	r := recs[0]
	if r.Event != audit.Grant || r.Task != "fix-1" || r.Dest != "docs.example.com" || r.Seconds != 900 ||
		r.User != "alice" || r.Sandbox != "demo" || r.Reason != "docs" || r.Result != audit.OK || !r.Expires.Equal(exp) {
		t.Errorf("record %+v", r)
	}
	if recs[1].Result != "nft: no such set" || !strings.HasPrefix(recs[2].Result, "refusing to grant: ") {
		t.Errorf("refusals recorded as %q, %q", recs[1].Result, recs[2].Result)
	}
}

// TestAllowForgeNote: a grant of a forge's name of git.forges is made (the
// names below it pass), with a note that the forge itself stays refused on
// the gateway's ports; none for other names, ports or the unlisted
// github.com (whose direct TLS the policy leaves allowed).
func TestAllowForgeNote(t *testing.T) {
	for _, c := range []struct{ yaml, dest, want string }{
		{"network: {domains: [github.com, git.example.com]}\ngit: {forges: [{host: git.example.com}]}\n", "git.example.com", "note: git.example.com itself stays refused on port 443"},
		{"network: {domains: [github.com, git.example.com]}\ngit: {forges: [{host: git.example.com}]}\n", "git.example.com:22", ""},
		{"network: {domains: [github.com, git.example.com]}\ngit: {forges: [{host: git.example.com}]}\n", "docs.example.com", ""},
		{"network: {domains: [github.com]}\n", "github.com", ""},
		{"network: {domains: [github.com]}\ngit: {forges: [{host: github.com}]}\n", "github.com:22,443", "note: github.com itself stays refused on port 443:"},
	} {
		d, err := ParseDest(c.dest)
		if err != nil {
			t.Fatal(err)
		}
		key := ": grant-name " + d.Name + " " + PortArg(d.Ports) + " 60"
		p, calls, _ := project(t, c.yaml, map[string]error{key: nil})
		var notes []string
		p.Note = func(n string) { notes = append(notes, n) }
		if _, err := p.Allow(t.Context(), "", Request{Dest: d, For: time.Minute, Reason: "r"}); err != nil || len(*calls) != 1 {
			t.Fatalf("%s with %q: %v, calls %q", c.dest, c.yaml, err, *calls)
		}
		if got := strings.Join(notes, "\n"); (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s with %q: note %q, want %q", c.dest, c.yaml, got, c.want)
		}
	}
}

// TestAllowUnwritableLog: a log that cannot be opened stops the grant
// before the egress is asked.
func TestAllowUnwritableLog(t *testing.T) {
	p, calls, _ := project(t, "", nil)
	p.AuditDir = func() (string, error) { return p.Dir, nil } // inside the project
	d, _ := ParseDest("198.18.7.0/24")
	if _, err := p.Allow(t.Context(), "", Request{Dest: d, For: time.Minute, Reason: "x"}); err == nil ||
		!strings.Contains(err.Error(), "inside the project") {
		t.Errorf("Allow: %v", err)
	}
	if len(*calls) != 0 {
		t.Errorf("egress calls %q", *calls)
	}
}

// TestLive: policy add's entries apply without an end and are recorded
// as policy-add; Live.All needs every port.
func TestLive(t *testing.T) {
	p, _, log := project(t, "", map[string]error{
		": grant-name git.example.com 22,443 0": nil,
		": revoke 198.18.7.0/24 5432":           nil,
	})
	g, _ := ParseDest("git.example.com:22,443")
	c, _ := ParseDest("198.18.7.0/24:5432")
	if err := p.AddLive(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveLive(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	recs, _ := audit.Read(log, time.Time{})
	if len(recs) != 2 || recs[0].Event != audit.PolicyAdd || recs[1].Event != audit.PolicyRemove || recs[0].Expires != nil {
		t.Errorf("records %+v", recs)
	}
	live := Live{"git.example.com 22": true}
	if live.All(g) || !(Live{"git.example.com 22": true, "git.example.com 443": true}).All(g) || live.All(Dest{Name: "x"}) {
		t.Error("Live.All")
	}
}

// TestAuditLog: agentbox audit's records are the log's with the expiries
// derived at the project's now, from since on.
func TestAuditLog(t *testing.T) {
	p, _, _ := project(t, "", map[string]error{": grant 198.18.7.0/24 443 600": nil})
	d, _ := ParseDest("198.18.7.0/24")
	if _, err := p.Allow(t.Context(), "", Request{Dest: d, For: 10 * time.Minute, Reason: "fixtures"}); err != nil {
		t.Fatal(err)
	}
	p.Now = func() time.Time { return now.Add(time.Hour) }
	recs, err := p.AuditLog(now.Add(time.Minute))
	if err != nil || len(recs) != 1 || recs[0].Event != audit.Expire || !recs[0].Time.Equal(now.Add(10*time.Minute)) {
		t.Errorf("%+v, %v", recs, err)
	}
	if recs, _ := p.AuditLog(time.Time{}); len(recs) != 2 || recs[0].Duration != "10m" {
		t.Errorf("the whole log: %+v", recs)
	}
}
