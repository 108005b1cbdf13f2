package generator

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
)

// TestProfiles: what each built-in and a custom profile derive from the
// configuration, and each profile's policy.
func TestProfiles(t *testing.T) {
	cfg, err := loadString(t, `
agent: claude
devcontainer: {ide: none}
network:
  domains: [example.org]
  cidrs: [198.18.0.0/24]
resources: {memory: 8g}
elevation: {max_duration: 2h}
profile: api
profiles:
  api:
    from: locked
    network: {domains: [api.anthropic.com]}
    resources: {pids: 64}
  lab:
    from: open
    network: {cidrs: [10.1.0.0/16]}
  calm:
    from: balanced
    elevation: {allowed: false}
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.ProfileNames(), " "); got != "api balanced calm lab locked open" || cfg.DefaultProfile != "api" {
		t.Fatalf("profiles %q, default %q", got, cfg.DefaultProfile)
	}
	for _, tc := range []struct {
		name    string
		locked  bool
		mode    firewall.Mode
		names   string // the policy's names
		cidrs   string
		memory  string
		pids    int
		elevate bool
	}{
		{"locked", true, firewall.ModeNone, "", "", "8g", config.DefaultPids, false},
		{"balanced", false, firewall.ModeAllowlist, "anthropic.com claude.ai claude.com example.org", "198.18.0.0/24", "8g", config.DefaultPids, true},
		{"open", false, firewall.ModeOpen, "", "198.18.0.0/24", "8g", config.DefaultPids, true},
		{"api", true, firewall.ModeAllowlist, "api.anthropic.com", "", "8g", 64, false},
		{"lab", false, firewall.ModeOpen, "", "10.1.0.0/16", "8g", config.DefaultPids, true},
		{"calm", false, firewall.ModeAllowlist, "anthropic.com claude.ai claude.com example.org", "198.18.0.0/24", "8g", config.DefaultPids, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := cfg.Profile(tc.name)
			if !ok {
				t.Fatal("missing")
			}
			pol := profilePolicy(cfg, p)
			var names, cidrs []string
			for _, d := range pol.Domains {
				names = append(names, d.Name)
			}
			for _, c := range pol.CIDRs {
				cidrs = append(cidrs, c.Prefix.String())
			}
			if p.Locked != tc.locked || pol.Mode != tc.mode || strings.Join(names, " ") != tc.names || strings.Join(cidrs, " ") != tc.cidrs ||
				p.Memory != tc.memory || p.Pids != tc.pids || p.Elevate.Allowed != tc.elevate {
				t.Errorf("locked %v mode %q names %q cidrs %q memory %s pids %d elevate %v", p.Locked, pol.Mode, names, cidrs, p.Memory, p.Pids, p.Elevate.Allowed)
			}
			if _, err := firewall.Render(pol); err != nil {
				t.Errorf("render: %v", err)
			}
		})
	}
	if p, _ := cfg.Profile("calm"); p.Elevate.Max != 2*time.Hour {
		t.Errorf("calm keeps the top-level max_duration: %v", p.Elevate.Max)
	}
}

// TestProfileSelectorFailsClosed: the egress image's entrypoint refuses a
// profile it does not hold, and an empty one, before anything runs.
func TestProfileSelectorFailsClosed(t *testing.T) {
	cfg, err := loadString(t, "agent: none\nprofiles: {ci: {from: locked}}\n")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(t.TempDir(), CompileOptions{Config: cfg, Lock: fakeLock(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "profile.sh")
	if err := os.WriteFile(script, c.Files[ProfileSelector], 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "nope", "balanced;true", "../balanced"} {
		cmd := exec.Command("sh", script, "health")
		cmd.Env = []string{ProfileEnv + "=" + p, "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "unknown profile") || !strings.Contains(string(out), "this image holds balanced ci locked open") {
			t.Errorf("%q: %v: %s", p, err, out)
		}
	}
}

// TestRequestTimeout: elevation.request_timeout reaches each profile's
// request endpoint (a profile's own, or the top level's); a profile that
// permits no grant has no endpoint; more than a day is refused.
func TestRequestTimeout(t *testing.T) {
	cfg, err := loadString(t, `
agent: none
elevation: {request_timeout: 30m, max_duration: 2h}
profiles:
  quick:
    from: balanced
    elevation: {request_timeout: 90s}
  calm:
    from: balanced
    elevation: {allowed: false}
`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"balanced": 30 * time.Minute, "quick": 90 * time.Second, "calm": 0, "locked": 0} {
		p, ok := cfg.Profile(name)
		if !ok {
			t.Fatalf("no profile %s", name)
		}
		pol := profilePolicy(cfg, p)
		switch {
		case want == 0 && pol.Requests != nil:
			t.Errorf("%s: a request endpoint without grants", name)
		case want != 0 && (pol.Requests == nil || pol.Requests.Timeout != want || pol.Requests.Max != 2*time.Hour):
			t.Errorf("%s: %+v, want a timeout of %v", name, pol.Requests, want)
		}
	}
	if _, err := loadString(t, "agent: none\nelevation: {request_timeout: 25h}\n"); err == nil || !strings.Contains(err.Error(), "elevation.request_timeout") || !strings.Contains(err.Error(), "is over 24h") {
		t.Errorf("25h: %v", err)
	}
}
