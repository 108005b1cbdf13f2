// Package catalog owns the facts agentbox knows about agent CLIs and
// egress services: each agent's npm package, base image, state directory,
// environment and domains, and the named groups of domains a sandbox may
// reach. It imports nothing else from the project.
package catalog

import "sort"

// Home is the agent user's home directory in the agent image.
const Home = "/home/agent"

// Agent is one catalog entry: how to install and run an agent CLI.
type Agent struct {
	Name      string
	Title     string   // the product's name: the agent's git identity is "Title (agentbox)"; "" for none
	Package   string   // npm package; "" for agent "none"
	BaseImage string   // default base image, repo:tag
	StateDir  string   // persisted in a named volume; "" for none
	Env       []EnvVar // sorted by name
	Domains   []string // egress at run time; "*.x" also admits x
	Extension string   // VS Code extension; "" when there is none
	Files     []File   // system-wide configuration baked into the agent image
}

// File is a file the agent image holds, root's and read-only to the agent:
// the CLI's system-wide configuration, so that it runs unattended in the
// sandbox (the sandbox, not the CLI's prompts, is the boundary).
type File struct {
	Path    string // absolute
	Content string // without a trailing newline
	Why     string // one line, for the Dockerfile's comment
}

// EnvVar is one environment variable.
type EnvVar struct{ Name, Value string }

// Service is a named group of egress domains.
type Service struct {
	Name    string
	Domains []string
}

// DefaultEgressImage is the base of the egress (firewall) image.
const DefaultEgressImage = "debian:bookworm-slim"

const nodeImage = "node:24-bookworm-slim"

// agents is the agent catalog, sorted by name. Facts from the vendors'
// documentation, 2026.
var agents = []Agent{
	{
		Name:      "claude",
		Title:     "Claude Code",
		Package:   "@anthropic-ai/claude-code",
		BaseImage: nodeImage,
		StateDir:  Home + "/.claude",
		Env: []EnvVar{
			{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
			{"CLAUDE_CONFIG_DIR", Home + "/.claude"},
			{"DISABLE_AUTOUPDATER", "1"},
		},
		Domains:   []string{"*.anthropic.com", "*.claude.ai", "*.claude.com"},
		Extension: "anthropic.claude-code",
		Files: []File{{
			Path:    "/etc/claude-code/managed-settings.json",
			Content: `{"permissions":{"defaultMode":"bypassPermissions"},"skipDangerousModePermissionPrompt":true}`,
			Why:     "Claude Code's managed settings: no permission prompts (claude -p runs its tools unattended)",
		}},
	},
	{
		Name:      "codex",
		Title:     "Codex",
		Package:   "@openai/codex",
		BaseImage: nodeImage,
		StateDir:  Home + "/.codex",
		Env:       []EnvVar{{"CODEX_HOME", Home + "/.codex"}},
		Domains:   []string{"*.chatgpt.com", "*.openai.com", "chatgpt.com"},
		Extension: "openai.chatgpt",
	},
	{
		Name:      "copilot",
		Title:     "Copilot CLI",
		Package:   "@github/copilot",
		BaseImage: nodeImage,
		StateDir:  Home + "/.copilot",
		Env:       []EnvVar{{"COPILOT_HOME", Home + "/.copilot"}},
		Domains: []string{
			"*.githubassets.com", "*.githubcopilot.com", "api.github.com", "collector.github.com",
			"copilot-proxy.githubusercontent.com", "copilot-telemetry.githubusercontent.com",
			"default.exp-tas.com", "github.com", "origin-tracker.githubusercontent.com",
		},
		Extension: "GitHub.copilot",
	},
	{
		Name:      "gemini",
		Title:     "Gemini CLI",
		Package:   "@google/gemini-cli",
		BaseImage: nodeImage,
		StateDir:  Home + "/.gemini",
		Domains:   []string{"cloudcode-pa.googleapis.com", "generativelanguage.googleapis.com", "oauth2.googleapis.com"},
		Extension: "Google.gemini-cli-vscode-ide-companion",
	},
	{Name: "none", BaseImage: DefaultEgressImage},
	{
		Name:      "opencode",
		Title:     "OpenCode",
		Package:   "opencode-ai",
		BaseImage: nodeImage,
		StateDir:  Home + "/.local/share/opencode",
		Env:       []EnvVar{{"OPENCODE_DISABLE_AUTOUPDATE", "true"}},
		Domains:   []string{"*.opencode.ai", "models.dev", "opencode.ai"},
	},
}

// services is the catalog of named domain groups, sorted by name. Every
// agent with domains is a service too, so `services: [claude]` lets an
// opencode sandbox reach Anthropic's API.
var services = []Service{
	{"crates", []string{"crates.io", "index.crates.io", "static.crates.io"}},
	{"github", []string{"*.github.com", "*.githubusercontent.com", "github.com", "githubusercontent.com"}},
	{"jetbrains", []string{"downloads.marketplace.jetbrains.com", "plugins.jetbrains.com"}},
	{"pypi", []string{"files.pythonhosted.org", "pypi.org"}},
	{"vscode", []string{"*.vsassets.io", "main.vscode-cdn.net", "marketplace.visualstudio.com", "mobile.events.data.microsoft.com", "update.code.visualstudio.com"}},
}

// Agents returns the agent catalog, sorted by name.
func Agents() []Agent { return agents }

// AgentNames returns the valid values of `agent`.
func AgentNames() []string {
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	return names
}

// LookupAgent returns the catalog entry for name.
func LookupAgent(name string) (Agent, bool) {
	for _, a := range agents {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// Services returns every service: the fixed groups and each agent with domains.
func Services() []Service {
	all := append([]Service(nil), services...)
	for _, a := range agents {
		if len(a.Domains) > 0 {
			all = append(all, Service{a.Name, a.Domains})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// ServiceNames returns the valid values of `network.services`.
func ServiceNames() []string {
	all := Services()
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	return names
}

// LookupService returns the service called name.
func LookupService(name string) (Service, bool) {
	for _, s := range Services() {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}
