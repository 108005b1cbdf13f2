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
	Files     []File   // the CLI's configuration, baked into the image
}

// EnvVar is one environment variable.
type EnvVar struct{ Name, Value string }

// File is a file the agent image holds at Path (absolute), root's and
// read-only for the agent. Body is a text/template over the generator's
// facts (.Env: the agent's environment by name; .Workspace; funcs header,
// toml and json); agentbox generate renders it into
// .agentbox/agent-files/<agent><Path>.
type File struct{ Path, Body string }

// Service is a named group of egress domains.
type Service struct {
	Name    string
	Domains []string
}

// DefaultEgressImage is the base of the egress (firewall) image.
const DefaultEgressImage = "debian:bookworm-slim"

const nodeImage = "node:24-bookworm-slim"

// geminiConfigDir is Gemini CLI's system configuration directory on Linux.
const geminiConfigDir = "/etc/gemini-cli"

// geminiDefaults: an API key (GEMINI_API_KEY; GOOGLE_GEMINI_BASE_URL names
// another endpoint), no usage statistics or telemetry, no update checks or
// updates (the image pins the version), and no sandbox of its own (the
// sandbox is agentbox's). Gemini CLI strips comments from both files.
const geminiDefaults = `// {{header}}
{
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "telemetry": {"enabled": false},
  "tools": {"sandbox": false}
}
`

// geminiTrusted trusts the workspace, so that Gemini CLI runs there
// unattended (it refuses an untrusted folder without a terminal).
const geminiTrusted = `// {{header}}
{
  {{json .Workspace}}: "TRUST_FOLDER"
}
`

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
		// The image pins the version: no downloads of newer ones.
		Env: []EnvVar{{"COPILOT_AUTO_UPDATE", "false"}, {"COPILOT_HOME", Home + "/.copilot"}},
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
		// The state directory is a volume that hides the image's files
		// there: the settings are the system's defaults, which the user's
		// own settings override. Gemini CLI reads files there only when
		// root owns them and every directory above.
		Env: []EnvVar{{"GEMINI_CLI_TRUSTED_FOLDERS_PATH", geminiConfigDir + "/trustedFolders.json"}},
		Files: []File{
			{geminiConfigDir + "/system-defaults.json", geminiDefaults},
			{geminiConfigDir + "/trustedFolders.json", geminiTrusted},
		},
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
