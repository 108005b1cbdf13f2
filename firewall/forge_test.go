package firewall

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func forgePolicy() Policy {
	return Policy{Gateway: true,
		Domains: []Domain{{Name: "github.com", Ports: []uint16{443}, Sources: []string{"service github"}}},
		Forges: []Forge{{Host: "github.com", Token: "GITHUB_TOKEN", TokenRepos: []string{"acme/app"},
			Push: []ForgePush{{Repo: "acme/app", Branches: []string{"agent/*", "feature-*"}}}}}}
}

// TestForgeConfigValid: HAProxy accepts the rendered configuration with
// git.lua (haproxy -c), when it is installed.
func TestForgeConfigValid(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("no haproxy")
	}
	files, err := Render(forgePolicy())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lua := filepath.Join(dir, "git.lua")
	if err := os.WriteFile(lua, GitLua(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkHaproxy(t, files, func(cfg string) string {
		cfg = strings.ReplaceAll(cfg, GatewayGitLua, lua)
		return strings.ReplaceAll(cfg, "stats socket", "#")
	})
}

// TestForgeChecks: Render refuses a forge the policy cannot serve.
func TestForgeChecks(t *testing.T) {
	for _, c := range []struct {
		what string
		edit func(*Policy)
		want string
	}{
		{"not allowed", func(p *Policy) { p.Forges[0].Host = "gitlab.com" }, "gitlab.com is not allowed on port 443"},
		{"another port", func(p *Policy) { p.Forges[0].Port = 8443 }, "not allowed on port 8443"},
		{"no gateway", func(p *Policy) { p.Gateway = false }, "forges need the gateway"},
		{"no token", func(p *Policy) { p.Forges[0].Token = "" }, "no token"},
		{"bad token", func(p *Policy) { p.Forges[0].Token = "A B" }, "token"},
		{"upper case", func(p *Policy) { p.Forges[0].TokenRepos = []string{"Acme/App"} }, `repository "Acme/App"`},
		{"one segment", func(p *Policy) { p.Forges[0].Push[0].Repo = "acme" }, "want owner/name"},
		{"dot dot", func(p *Policy) { p.Forges[0].Push[0].Repo = "acme/../x" }, `repository "acme/../x"`},
		{".git", func(p *Policy) { p.Forges[0].TokenRepos = []string{"acme/app.git"} }, "without .git"},
		{"colon", func(p *Policy) { p.Forges[0].Push[0].Branches = []string{"a:b"} }, `branch pattern "a:b"`},
		{"space", func(p *Policy) { p.Forges[0].Push[0].Branches = []string{"a b"} }, `branch pattern "a b"`},
		{"refs/", func(p *Policy) { p.Forges[0].Push[0].Branches = []string{"refs/heads/x"} }, "without refs/heads/"},
		{"no branches", func(p *Policy) { p.Forges[0].Push[0].Branches = nil }, "no branches"},
		{"twice", func(p *Policy) { p.Forges = append(p.Forges, p.Forges[0]) }, "listed twice"},
	} {
		p := forgePolicy()
		c.edit(&p)
		if _, err := Render(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.what, err, c.want)
		}
	}
	files, err := Render(forgePolicy())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lua-load " + GatewayGitLua, "bind 127.0.0.1:980", "tcp-request content reject if { var(txn.dotname) -m str .github.com }",
		"http-request lua.agentbox_git_push agent/*:feature-* if push !judged { var(txn.git_repo) -m str acme/app }",
		"ssl verify required ca-file " + GatewayCAFile + " sni str(github.com) verifyhost github.com"} {
		if !strings.Contains(string(files[gatewayFile]), want) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	if out := sourceEntrypointOf(t, forgePolicy(), `echo "${GATEWAY_KEYS[*]}"`); out != "GITHUB_TOKEN\n" {
		t.Errorf("the entrypoint takes the keys %q, want the forge's token", out)
	}
	p := forgePolicy()
	p.Forges[0].Direct = true
	if files, err = Render(p); err != nil || strings.Contains(string(files[gatewayFile]), "reject if { var(txn.dotname) -m str .github.com }") ||
		!strings.Contains(string(files[gatewayFile]), "frontend forge_github.com") {
		t.Errorf("a Direct forge: %v, want its front door and its name not refused", err)
	}
}

// TestGitLuaNoHTTPClient: haproxy.cfg turns off the verification of
// HAProxy's own HTTP client (httpclient.ssl.verify none: its CA store
// cost most of HAProxy's start), which is safe only while no Lua of the
// gateway's calls it.
func TestGitLuaNoHTTPClient(t *testing.T) {
	lua, err := templateFS.ReadFile("templates/git.lua.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(lua), "httpclient") {
		t.Error("git.lua calls HAProxy's HTTP client, which haproxy.cfg configures not to verify")
	}
}
