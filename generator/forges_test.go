package generator

import (
	"fmt"
	"github.com/agentbox-dev/agentbox/config"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

const forgesYAML = `
agent: claude
devcontainer: {ide: none}
network:
  services: [github]
  domains: [git.corp.example]
secrets: [GITHUB_TOKEN, CORP_TOKEN, OTHER]
git:
  forges:
    - host: git.corp.example
      token: CORP_TOKEN
      repos: [team/app]
      push:
        - repo: team/app
          branches: ["agent/*"]
`

// TestProfileForges: with the gateway, each forge of git.forges that the
// profile allows, and github.com unlisted (no token, no push), get a front
// door; the agent's git is sent there, the token is held, not passed.
func TestProfileForges(t *testing.T) {
	cfg, err := loadString(t, forgesYAML)
	if err != nil {
		t.Fatal(err)
	}
	pol := gatewayPolicy(t, cfg, "balanced")
	forges := ProfileForges(cfg, pol)
	if got := fmt.Sprint(forges); got != "[{git.corp.example 0 CORP_TOKEN [team/app] [{team/app [agent/*]}] false} {github.com 0  [] [] true}]" {
		t.Errorf("forges: %s", got)
	}
	off := profilePolicy(cfg, mustProfile(t, cfg, "balanced"))
	off.Gateway = false
	if got := ProfileForges(cfg, off); got != nil {
		t.Errorf("forges without the gateway: %v", got)
	}
	pol.Forges = forges
	if _, err := firewall.Render(pol); err != nil {
		t.Errorf("the firewall refuses the forges: %v", err)
	}
	env, secrets := withForges(nil, cfg.Secrets, forges, false)
	if !slices.Equal(secrets, []string{"GITHUB_TOKEN", "OTHER"}) {
		t.Errorf("secrets: %v, want the token held", secrets)
	}
	var got []string
	for _, e := range env {
		got = append(got, e.Name+"="+e.Value)
	}
	want := []string{GatewayReadyEnv + "=980", "CORP_TOKEN=" + catalog.KeyPlaceholder, "GIT_CONFIG_COUNT=4",
		"GIT_CONFIG_KEY_0=url.http://127.0.0.1:980/.insteadOf", "GIT_CONFIG_KEY_1=http.http://127.0.0.1:980/.proxy",
		"GIT_CONFIG_KEY_2=url.http://127.0.0.1:981/.insteadOf", "GIT_CONFIG_KEY_3=http.http://127.0.0.1:981/.proxy",
		"GIT_CONFIG_VALUE_0=https://git.corp.example/", "GIT_CONFIG_VALUE_1=", "GIT_CONFIG_VALUE_2=https://github.com/", "GIT_CONFIG_VALUE_3="}
	if !slices.Equal(got, want) {
		t.Errorf("env:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if names := HeldKeyNames(cfg, "balanced"); !slices.Equal(names, []string{"CORP_TOKEN"}) {
		t.Errorf("held by balanced's gateway: %v, want the forge's token", names)
	}
}

// TestPlanForgesNotAllowed: a forge the default profile does not allow is
// an error at its host.
func TestPlanForgesNotAllowed(t *testing.T) {
	cfg, err := loadString(t, strings.Replace(forgesYAML, "domains: [git.corp.example]", "domains: [other.example]", 1))
	if err != nil {
		t.Fatal(err)
	}
	pp := ProfilePlan{Name: "balanced", Policy: gatewayPolicy(t, cfg, "balanced")}
	var errs yamlpos.Errors
	planForges(cfg, &pp, &errs)
	if err := errs.Err(); err == nil || !strings.Contains(err.Error(), "git.forges[0].host: profile balanced does not allow git.corp.example on port 443") {
		t.Errorf("%v, want the forge's error", err)
	}
}

// TestForgesRender: the profile with a gateway sends the agent's git to
// the front doors and holds the token; the egress image has git.lua; a
// profile without a gateway passes the token as before; a task's override
// sets the same.
func TestForgesRender(t *testing.T) {
	cfg, err := loadString(t, forgesYAML)
	if err != nil {
		t.Fatal(err)
	}
	errs := &yamlpos.Errors{File: config.ConfigFile}
	p := plan(cfg, fakeLock(cfg), errs)
	for i := range p.Profiles {
		if p.Profiles[i].Policy.Mode == firewall.ModeAllowlist {
			p.Profiles[i].Policy.Gateway = true
		}
		planForges(cfg, &p.Profiles[i], errs)
	}
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	files, err := render(p)
	if err != nil {
		t.Fatal(err)
	}
	compose := string(files[ComposeFile])
	for _, want := range []string{
		"      CORP_TOKEN: \"" + catalog.KeyPlaceholder + "\"\n",
		"      GIT_CONFIG_KEY_2: \"url.http://127.0.0.1:981/.insteadOf\"\n",
		"      GIT_CONFIG_VALUE_2: \"https://github.com/\"\n",
		"      GIT_CONFIG_VALUE_3: \"\"\n",
		"      GITHUB_TOKEN:\n",
	} {
		if !strings.Contains(compose, want) {
			t.Errorf("the balanced compose file lacks %q", want)
		}
	}
	if strings.Contains(compose, "      CORP_TOKEN:\n") {
		t.Error("the balanced compose file passes CORP_TOKEN from the host")
	}
	if lua := files[EgressProgramDir+"/git.lua"]; !strings.Contains(string(lua), "agentbox_git_push") {
		t.Errorf("the egress program has no git.lua")
	}
	docker := string(files[EgressDockerfile])
	for _, want := range []string{"install -D -m 0644 git.lua " + firewall.GatewayGitLua + ";"} {
		if !strings.Contains(docker, want) {
			t.Errorf("the egress Dockerfile lacks %q:\n%s", want, docker)
		}
	}
	open := string(files[ProfileCompose(cfg, "open")])
	if !strings.Contains(open, "      CORP_TOKEN:\n") || strings.Contains(open, "GIT_CONFIG") {
		t.Error("the open profile (no gateway) changed how it passes CORP_TOKEN, or has front doors")
	}
}
