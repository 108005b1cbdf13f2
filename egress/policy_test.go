package egress

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/sandbox"
)

const policyYAML = `name: demo
agent: none
network:
  domains: [api.example.com]
profiles:
  work:
    from: locked
    network:
      domains: [work.example.com]
`

// policyProject is a generated project of policyYAML whose sandbox runs
// profile running ("" for none), and whose egress answers from replies
// ("args": its output, or an error); an unknown command fails the test.
func policyProject(t *testing.T, running string, replies map[string]any) (*Project, *[]string) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	lock, err := os.ReadFile("../testdata/golden/agent-none/agentbox.lock")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"agentbox.yaml": []byte(policyYAML), "agentbox.lock": lock} {
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
	p := &Project{Dir: dir, Name: c.Config.Name, Config: c.Config,
		Egress: func(_ context.Context, _, task string, args ...string) (string, error) {
			key := strings.Join(args, " ")
			calls = append(calls, key)
			switch r := replies[key].(type) {
			case string:
				return r, nil
			case error:
				return "", r
			}
			t.Errorf("unexpected egress command %q", key)
			return "", errors.New("unexpected")
		},
		Profile: func(context.Context, string, string) (string, error) {
			if running == "" {
				return "", errors.New("no egress container runs")
			}
			return running, nil
		},
		AuditDir: func() (string, error) { return state, nil },
		User:     func() string { return "alice" },
		Now:      func() time.Time { return now },
	}
	return p, &calls
}

func entries(t *testing.T, ports []uint16, names ...string) []config.PolicyEntry {
	t.Helper()
	var out []config.PolicyEntry
	for _, n := range names {
		e, err := config.ParsePolicyEntry(n, ports)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// recordUp records, as agentbox up does, that the sandbox started from the
// files in p.Dir now.
func recordUp(t *testing.T, p *Project) string {
	t.Helper()
	abs, _ := filepath.Abs(p.Dir)
	sum, err := sandbox.FilesHash(p.Dir)
	if err != nil {
		t.Fatal(err)
	}
	path, err := sandbox.UpRecordPath(p.Name)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(sandbox.UpRecord{Dir: abs, Egress: "e1", Files: sum})
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return sum
}

// upFiles is the files that up's record says the sandbox runs.
func upFiles(p *Project) string {
	rec, _ := sandbox.ReadUpRecord(p.Dir, p.Name)
	if rec == nil {
		return ""
	}
	return rec.Files
}

// TestChangePolicyAdd: an entry added to the running profile's list goes
// to the egress live and to the audit log, and up's record moves on with
// the files; one that does not reach the running sandbox says why.
func TestChangePolicyAdd(t *testing.T) {
	p, calls := policyProject(t, "balanced", map[string]any{
		"grant-name docs.example.com 443 0": "",
		"grant 198.18.7.0/24 5432 0":        "",
		"grant-name fail.example.com 443 0": errors.New("nft: no such set"),
	})
	recordUp(t, p)
	ctx := t.Context()
	r, err := p.ChangePolicy(ctx, PolicyChange{Entries: entries(t, nil, "docs.example.com", "api.example.com")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Unapplied != Applied || r.Running != "balanced" || len(r.Live) != 1 || r.Live[0].Dest.String() != "docs.example.com" ||
		!slices.Equal(r.Live[0].Dest.Ports, []uint16{443}) || len(r.Already) != 1 || len(r.Files) == 0 {
		t.Errorf("result %+v", r)
	}
	if sum, _ := sandbox.FilesHash(p.Dir); upFiles(p) != sum {
		t.Error("up's record did not move on with a change made live")
	}
	if _, err := p.ChangePolicy(ctx, PolicyChange{Entries: entries(t, []uint16{5432}, "198.18.7.0/24")}); err != nil {
		t.Fatal(err)
	}
	path, _ := p.AuditPath()
	recs, _ := audit.Read(path, time.Time{})
	if len(recs) != 2 || recs[0].Event != audit.PolicyAdd || recs[1].Dest != "198.18.7.0/24" || recs[1].Result != audit.OK {
		t.Errorf("audit log %+v", recs)
	}
	before := upFiles(p)
	for _, tc := range []struct {
		change PolicyChange
		want   Unapplied
	}{
		{PolicyChange{Profile: "work", Entries: entries(t, nil, "w2.example.com")}, OtherProfile},
		{PolicyChange{Entries: entries(t, nil, "later.example.com"), NoApply: true}, NotAsked},
	} {
		r, err := p.ChangePolicy(ctx, tc.change)
		if err != nil || r.Unapplied != tc.want || len(r.Changed) != 1 || r.Live != nil {
			t.Errorf("%+v: %+v, %v", tc.change, r, err)
		}
	}
	if upFiles(p) != before {
		t.Error("a change not applied moved up's record")
	}
	r, err = p.ChangePolicy(ctx, PolicyChange{Entries: entries(t, nil, "fail.example.com")})
	if err == nil || err.Error() != "applying fail.example.com to the running sandbox: nft: no such set (agentbox.yaml has it: agentbox up applies it, recreating the containers)" ||
		len(r.Changed) != 1 || len(r.Live) != 0 {
		t.Errorf("a failed live add: %+v, %v", r, err)
	}
	if len(*calls) != 3 {
		t.Errorf("egress calls %q", *calls)
	}
}

// TestChangePolicyNoSandbox: with no sandbox running the edit is written
// and not applied, and says why; with --profile and no-apply the running
// profile is not asked.
func TestChangePolicyNoSandbox(t *testing.T) {
	p, calls := policyProject(t, "", nil)
	r, err := p.ChangePolicy(t.Context(), PolicyChange{Entries: entries(t, nil, "docs.example.com")})
	if err != nil || r.Unapplied != NoSandbox || r.Why == nil || r.Why.Error() != "no egress container runs" {
		t.Errorf("%+v, %v", r, err)
	}
	if data, _ := os.ReadFile(filepath.Join(p.Dir, "agentbox.yaml")); !strings.Contains(string(data), "docs.example.com") {
		t.Errorf("agentbox.yaml:\n%s", data)
	}
	p.Profile = func(context.Context, string, string) (string, error) {
		t.Error("the running profile was asked")
		return "", nil
	}
	r, err = p.ChangePolicy(t.Context(), PolicyChange{Profile: "work", Entries: entries(t, nil, "w2.example.com"), NoApply: true})
	if err != nil || r.Unapplied != NotAsked || r.Running != "" || r.Section[0] != "profiles" {
		t.Errorf("%+v, %v", r, err)
	}
	if len(*calls) != 0 {
		t.Errorf("egress calls %q", *calls)
	}
}

// TestChangePolicyRemove: an entry given live leaves the egress live; one
// baked into the egress image is Baked, for agentbox up, and up's record
// stays as it was.
func TestChangePolicyRemove(t *testing.T) {
	p, calls := policyProject(t, "balanced", map[string]any{
		"grant-name docs.example.com 443 0": "",
		"policies":                          "docs.example.com 443\n",
		"revoke-name docs.example.com 443":  "",
	})
	recordUp(t, p)
	ctx := t.Context()
	if _, err := p.ChangePolicy(ctx, PolicyChange{Entries: entries(t, nil, "docs.example.com")}); err != nil {
		t.Fatal(err)
	}
	before := upFiles(p)
	r, err := p.ChangePolicy(ctx, PolicyChange{Entries: entries(t, nil, "docs.example.com", "api.example.com"), Remove: true})
	if err != nil || len(r.Live) != 1 || r.Live[0].Entry.String() != "docs.example.com" || !slices.Equal(r.Baked, []string{"api.example.com"}) {
		t.Fatalf("%+v, %v", r, err)
	}
	if upFiles(p) != before {
		t.Error("a removal that needs agentbox up moved up's record")
	}
	if !slices.Equal(*calls, []string{"grant-name docs.example.com 443 0", "policies", "revoke-name docs.example.com 443"}) {
		t.Errorf("egress calls %q", *calls)
	}
}

// TestParseRequest: allow's destination, --for and --reason.
func TestParseRequest(t *testing.T) {
	r, err := ParseRequest("docs.example.com:22", "1h30m", "  read the docs  ")
	if err != nil || r.String() != "docs.example.com" || r.For != 90*time.Minute || r.Reason != "read the docs" || !slices.Equal(r.Ports, []uint16{22}) {
		t.Errorf("%+v, %v", r, err)
	}
	for _, tc := range [][4]string{
		{"198.18.7.1/24", "1h", "r", "invalid destination"},
		{"198.18.7.0/24", "", "r", "--for is required"},
		{"198.18.7.0/24", "90d", "r", "invalid --for: invalid duration"},
		{"198.18.7.0/24", "1h", " ", "--reason is required: say why the sandbox needs 198.18.7.0/24"},
	} {
		if _, err := ParseRequest(tc[0], tc[1], tc[2]); err == nil || !strings.HasPrefix(err.Error(), tc[3]) {
			t.Errorf("%q: %v, want %s", tc[:3], err, tc[3])
		}
	}
}
