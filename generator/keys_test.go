package generator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	corev1 "k8s.io/api/core/v1"
)

// keysYAML lists three model keys (two by secrets, one by run.env), one of
// them for an endpoint of the user's, and a secret that is no model key.
const keysYAML = `
agent: claude
devcontainer: {ide: none}
env:
  GOOGLE_GEMINI_BASE_URL: https://gemini.corp.example/api/
network:
  services: [codex]
  domains: [gemini.corp.example]
secrets: [ANTHROPIC_API_KEY, MY_TOKEN]
run:
  env: [GEMINI_API_KEY, OPENAI_API_KEY]
`

// gatewayPolicy is profile name's policy with the gateway on (as the
// generator sets it for allowlist profiles).
func gatewayPolicy(t *testing.T, cfg *config.Config, name string) firewall.Policy {
	t.Helper()
	prof, ok := cfg.Profile(name)
	if !ok {
		t.Fatalf("no profile %s", name)
	}
	pol := profilePolicy(cfg, prof)
	pol.Gateway = true
	return pol
}

// TestHeldKeys: each model key of secrets and run.env goes to the gateway
// with its provider (the catalog's, or env:'s), its header, and a base URL
// on its listener that keeps the provider's path.
func TestHeldKeys(t *testing.T) {
	cfg, err := loadString(t, keysYAML)
	if err != nil {
		t.Fatal(err)
	}
	held, errs := HeldKeys(cfg, gatewayPolicy(t, cfg, "balanced"))
	if errs != nil {
		t.Fatal(errs)
	}
	var got []string
	for _, k := range held {
		got = append(got, fmt.Sprintf("%s %s %v %s:%d %s=%s", k.Name, k.Header, k.Bearer, k.Host, k.Port, k.BaseVar, k.BaseURL))
	}
	want := []string{
		"ANTHROPIC_API_KEY x-api-key false api.anthropic.com:443 ANTHROPIC_BASE_URL=http://127.0.0.1:1000",
		"GEMINI_API_KEY x-goog-api-key false gemini.corp.example:443 GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:1001/api",
		"OPENAI_API_KEY authorization true api.openai.com:443 OPENAI_BASE_URL=http://127.0.0.1:1002/v1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("held keys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, name := range []string{"open", "locked"} {
		if held, _ := HeldKeys(cfg, gatewayPolicy(t, cfg, name)); len(held) > 0 {
			t.Errorf("profile %s (no gateway) holds keys: %v", name, held)
		}
	}
	pol := gatewayPolicy(t, cfg, "balanced")
	pol.Gateway = false
	if held, _ := HeldKeys(cfg, pol); len(held) > 0 {
		t.Errorf("without the gateway, keys are held: %v", held)
	}
}

// TestHeldKeysRefused: a provider the gateway cannot serve safely is an
// error at the key's name; the key never falls back to the agent.
func TestHeldKeysRefused(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"env: {ANTHROPIC_BASE_URL: 'http://llm.corp.example'}\nnetwork: {domains: [llm.corp.example]}\nsecrets: [ANTHROPIC_API_KEY]",
			"secrets[0]: profile balanced: the gateway holds ANTHROPIC_API_KEY for the agent: ANTHROPIC_BASE_URL \"http://llm.corp.example\": plain HTTP only to a private address"},
		{"env: {ANTHROPIC_BASE_URL: 'https://10.0.0.5'}\nnetwork: {cidrs: [10.0.0.5/32]}\nsecrets: [ANTHROPIC_API_KEY]", "name the provider's host"},
		{"env: {ANTHROPIC_BASE_URL: 'http://198.18.0.5:8080'}\nnetwork: {cidrs: [{cidr: 198.18.0.5/32, ports: [8080]}]}\nsecrets: [ANTHROPIC_API_KEY]", "198.18.0.5 is a public address"},
		{"env: {ANTHROPIC_BASE_URL: 'http://10.0.0.5:8080'}\nsecrets: [ANTHROPIC_API_KEY]", "10.0.0.5 port 8080 is in no CIDR entry"},
		{"env: {ANTHROPIC_BASE_URL: 'https://llm.corp.example'}\nsecrets: [ANTHROPIC_API_KEY]", "llm.corp.example is not allowed on port 443"},
		{"secrets: [OPENAI_API_KEY]", "api.openai.com is not allowed on port 443"},
		{"env: {ANTHROPIC_BASE_URL: 'ftp://x.anthropic.com'}\nsecrets: [ANTHROPIC_API_KEY]", "want https"},
	} {
		cfg, err := loadString(t, "agent: claude\ndevcontainer: {ide: none}\n"+c.yaml)
		if err != nil {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		pp := profilePlan(cfg, mustProfile(t, cfg, "balanced"), "")
		pp.Policy.Gateway = true
		errs := &yamlpos.Errors{File: config.ConfigFile}
		if held := planKeys(cfg, &pp, errs); len(held) > 0 {
			t.Errorf("%s: held %v", c.yaml, held)
		}
		if err := errs.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.yaml, err, c.want)
		}
	}
}

func mustProfile(t *testing.T, cfg *config.Config, name string) *config.Profile {
	t.Helper()
	prof, ok := cfg.Profile(name)
	if !ok {
		t.Fatalf("no profile %s", name)
	}
	return prof
}

// TestHeldKeysPlainAndTyped: plain HTTP to a private address in
// network.cidrs (a local model server); Copilot's provider type chooses
// its header.
func TestHeldKeysPlainAndTyped(t *testing.T) {
	cfg, err := loadString(t, `
agent: copilot
devcontainer: {ide: none}
env:
  COPILOT_PROVIDER_BASE_URL: http://10.0.0.5:8080/v1
  COPILOT_PROVIDER_TYPE: anthropic
network:
  cidrs: [{cidr: 10.0.0.0/24, ports: [8080]}]
secrets: [COPILOT_PROVIDER_API_KEY]
`)
	if err != nil {
		t.Fatal(err)
	}
	held, errs := HeldKeys(cfg, gatewayPolicy(t, cfg, "balanced"))
	if errs != nil || len(held) != 1 {
		t.Fatalf("%v %v", held, errs)
	}
	if k := held[0]; k.Header != "x-api-key" || k.Bearer || k.Host != "10.0.0.5" || k.Port != 8080 || k.BaseURL != "http://127.0.0.1:1000/v1" {
		t.Errorf("copilot's key: %+v", k)
	}
}

// TestHeldKeysRender: the profile with a gateway gives the agent the
// placeholder and the gateway's base URL, not the key; its haproxy.cfg
// serves the key; a profile without a gateway passes the key as before;
// a task passes no held key from the host.
func TestHeldKeysRender(t *testing.T) {
	cfg, err := loadString(t, keysYAML)
	if err != nil {
		t.Fatal(err)
	}
	errs := &yamlpos.Errors{File: config.ConfigFile}
	p := plan(cfg, fakeLock(cfg), errs)
	for i := range p.Profiles {
		p.Profiles[i].Policy.Gateway = true
		p.Profiles[i].Keys = planKeys(cfg, &p.Profiles[i], errs)
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
		"      ANTHROPIC_API_KEY: \"" + catalog.KeyPlaceholder + "\"\n",
		"      ANTHROPIC_BASE_URL: \"http://127.0.0.1:1000\"\n",
		"      " + GatewayReadyEnv + ": \"1000\"\n",
		"      MY_TOKEN:\n",
	} {
		if !strings.Contains(compose, want) {
			t.Errorf("the balanced compose file lacks %q", want)
		}
	}
	// run.env's keys are the tasks': the sandbox's agent has no trace of them.
	if strings.Contains(compose, "OPENAI") || strings.Contains(compose, "GEMINI_API_KEY") || strings.Contains(compose, "127.0.0.1:1001") {
		t.Errorf("the balanced compose file rewrites a key of run.env:\n%s", compose)
	}
	if strings.Contains(compose, "      ANTHROPIC_API_KEY:\n") {
		t.Error("the balanced compose file passes ANTHROPIC_API_KEY from the host")
	}
	if cfgText := string(files[EgressDir+"/haproxy.cfg"]); !strings.Contains(cfgText, "frontend key_ANTHROPIC_BASE_URL\n") {
		t.Errorf("balanced's haproxy.cfg serves no ANTHROPIC_API_KEY:\n%s", cfgText)
	}
	open := string(files[ProfileCompose(cfg, "open")])
	if !strings.Contains(open, "      ANTHROPIC_API_KEY:\n") || strings.Contains(open, catalog.KeyPlaceholder) {
		t.Error("the open profile (no gateway) changed how it passes ANTHROPIC_API_KEY")
	}
}

// TestHeldKeysCodex: Codex's system configuration names the gateway as
// its provider when the default profile's gateway holds OPENAI_API_KEY.
func TestHeldKeysCodex(t *testing.T) {
	cfg, err := loadString(t, "agent: codex\ndevcontainer: {ide: none}\nsecrets: [OPENAI_API_KEY]\n")
	if err != nil {
		t.Fatal(err)
	}
	errs := &yamlpos.Errors{File: config.ConfigFile}
	p := plan(cfg, fakeLock(cfg), errs)
	for i := range p.Profiles {
		p.Profiles[i].Policy.Gateway = true
		p.Profiles[i].Keys = planKeys(cfg, &p.Profiles[i], errs)
	}
	files, err := render(p)
	if err != nil || errs.Err() != nil {
		t.Fatal(err, errs.Err())
	}
	toml := string(files[AgentFilesDir+"/codex"+catalog.CodexSystemConfig])
	if !strings.Contains(toml, "base_url = \"http://127.0.0.1:1000/v1\"\nenv_key = \"OPENAI_API_KEY\"\n") {
		t.Errorf("codex's config.toml:\n%s", toml)
	}
}

// TestModelKeysAreValid: every model key of the catalog has a header the
// gateway replaces, and its default provider is an https URL whose host
// an agent of the catalog allows.
func TestModelKeysAreValid(t *testing.T) {
	for _, mk := range catalog.ModelKeys() {
		headers := []catalog.KeyHeader{{Header: mk.Header, Bearer: mk.Bearer}}
		for _, h := range mk.TypeHeaders {
			headers = append(headers, h)
		}
		for _, h := range headers {
			if !slices.Contains(firewall.KeyHeaders, h.Header) {
				t.Errorf("%s: header %q is not one the gateway replaces", mk.Name, h.Header)
			}
		}
		if mk.Default == "" {
			continue
		}
		k, err := heldKey(mk, mk.Default, nil)
		if err != nil || k.Port != 443 {
			t.Errorf("%s: default %q: %v", mk.Name, mk.Default, err)
			continue
		}
		covered := false
		for _, s := range catalog.Services() {
			for _, d := range s.Domains {
				covered = covered || k.Host == strings.TrimPrefix(d, "*.") || strings.HasSuffix(k.Host, strings.TrimPrefix(d, "*"))
			}
		}
		if !covered {
			t.Errorf("%s: no service of the catalog allows %s", mk.Name, k.Host)
		}
	}
}

// TestKubeKeys: on Kubernetes the keys' Secret is mounted in egress alone,
// root's and read-only, and the agent gets the placeholders and the
// gateway's base URLs in place of its own.
func TestKubeKeys(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "egress"}},
		Containers: []corev1.Container{{Name: "agent", Env: []corev1.EnvVar{{Name: "ANTHROPIC_BASE_URL", Value: "https://llm.corp.example"}, {Name: "HOME", Value: "/home/agent"}}},
			{Name: "collect"}},
	}
	held := []HeldKey{{Key: firewall.Key{Name: "ANTHROPIC_API_KEY"}, BaseVar: "ANTHROPIC_BASE_URL", BaseURL: "http://127.0.0.1:1000"}}
	kubeKeys(spec, held, "job-keys")
	if len(spec.Volumes) != 1 || spec.Volumes[0].Secret == nil || spec.Volumes[0].Secret.SecretName != "job-keys" || *spec.Volumes[0].Secret.DefaultMode != 0o400 {
		t.Errorf("volumes: %+v", spec.Volumes)
	}
	if m := spec.InitContainers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != firewall.GatewayKeysDir || !m[0].ReadOnly {
		t.Errorf("egress's mounts: %+v", m)
	}
	for _, c := range spec.Containers {
		if len(c.VolumeMounts) > 0 {
			t.Errorf("%s mounts %+v", c.Name, c.VolumeMounts)
		}
	}
	if got := fmt.Sprint(spec.Containers[0].Env); got != "[{ANTHROPIC_BASE_URL http://127.0.0.1:1000 nil} {HOME /home/agent nil} {ANTHROPIC_API_KEY "+catalog.KeyPlaceholder+" nil}]" {
		t.Errorf("the agent's environment: %s", got)
	}
}

// TestTaskKeyEnv: a task's agent gets the placeholder and base URL of
// every held key, run.env's too, and the port to wait on.
func TestTaskKeyEnv(t *testing.T) {
	env := map[string]any{"OPENAI_BASE_URL": "https://llm.corp.example/v1", WaitFirewallEnv: "1"}
	taskKeyEnv(env, []HeldKey{{Key: firewall.Key{Name: "OPENAI_API_KEY"}, BaseVar: "OPENAI_BASE_URL", BaseURL: "http://127.0.0.1:1000/v1"}})
	want := map[string]any{"OPENAI_API_KEY": catalog.KeyPlaceholder, "OPENAI_BASE_URL": "http://127.0.0.1:1000/v1", WaitFirewallEnv: "1", GatewayReadyEnv: "1000"}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("%v, want %v", env, want)
	}
	env = map[string]any{}
	if taskKeyEnv(env, nil); len(env) != 0 {
		t.Errorf("no held keys: %v", env)
	}
}

// TestHeldKeysOneBaseURL: a user may hold claude's API key and its
// subscription token at once (secrets and run.env): both go to the
// gateway, on ANTHROPIC_BASE_URL's one listener, in claude's own order
// (ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN),
// whatever order agentbox.yaml lists them in.
func TestHeldKeysOneBaseURL(t *testing.T) {
	cfg, err := loadString(t, "agent: claude\ndevcontainer: {ide: none}\nsecrets: [CLAUDE_CODE_OAUTH_TOKEN, ANTHROPIC_API_KEY]\nrun: {env: [ANTHROPIC_AUTH_TOKEN]}\n")
	if err != nil {
		t.Fatal(err)
	}
	held, errs := HeldKeys(cfg, gatewayPolicy(t, cfg, "balanced"))
	if errs != nil {
		t.Fatal(errs)
	}
	var got []string
	for _, k := range held {
		got = append(got, fmt.Sprintf("%s %s %s=%s", k.Name, k.Base, k.BaseVar, k.BaseURL))
	}
	want := []string{
		"ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL ANTHROPIC_BASE_URL=http://127.0.0.1:1000",
		"ANTHROPIC_API_KEY ANTHROPIC_BASE_URL ANTHROPIC_BASE_URL=http://127.0.0.1:1000",
		"CLAUDE_CODE_OAUTH_TOKEN ANTHROPIC_BASE_URL ANTHROPIC_BASE_URL=http://127.0.0.1:1000",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("held keys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	errsPos := &yamlpos.Errors{File: config.ConfigFile}
	p := plan(cfg, fakeLock(cfg), errsPos)
	if err := errsPos.Err(); err != nil {
		t.Fatal(err)
	}
	files, err := render(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(files[EgressDir+"/haproxy.cfg"]), "\nfrontend key_"); n != 1 {
		t.Errorf("balanced's haproxy.cfg has %d key frontends, want one for ANTHROPIC_BASE_URL", n)
	}
}

// TestHeldKeysQuery: a base URL's query stays in the agent's base URL on
// the gateway, which passes the request's path and query through as the
// CLI sends them: the provider sees what it would without the gateway.
func TestHeldKeysQuery(t *testing.T) {
	cfg, err := loadString(t, "agent: codex\ndevcontainer: {ide: none}\nnetwork: {domains: [models.example.test]}\nenv: {OPENAI_BASE_URL: 'https://models.example.test/v1?team=\"a\"&x=1'}\nrun: {env: [OPENAI_API_KEY]}\n")
	if err != nil {
		t.Fatal(err)
	}
	held, errs := HeldKeys(cfg, gatewayPolicy(t, cfg, "balanced"))
	if errs != nil || len(held) != 1 {
		t.Fatalf("%v %v", held, errs)
	}
	if k := held[0]; k.BaseURL != `http://127.0.0.1:1000/v1?team="a"&x=1` || k.Host != "models.example.test" || k.Port != 443 {
		t.Errorf("the key of a base URL with a query: %+v", k)
	}
	for _, bad := range []string{"https://models.example.test/v1#frag", "https://u:p@models.example.test/v1"} {
		cfg, err := loadString(t, "agent: codex\ndevcontainer: {ide: none}\nnetwork: {domains: [models.example.test]}\nenv: {OPENAI_BASE_URL: '"+bad+"'}\nrun: {env: [OPENAI_API_KEY]}\n")
		if err != nil {
			t.Fatal(err)
		}
		if _, errs := HeldKeys(cfg, gatewayPolicy(t, cfg, "balanced")); errs["OPENAI_API_KEY"] == nil {
			t.Errorf("%s: held", bad)
		}
	}
}
