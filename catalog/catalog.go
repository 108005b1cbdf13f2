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
	// Login are the names the CLI's interactive login reaches from inside
	// the sandbox (the browser half runs on the user's machine): the
	// service NAME-login, which a policy turns on for the login only.
	Login []string
	// Credentials are the files in StateDir that an interactive login
	// writes: what agentbox run copies into each task's fresh state
	// volume when run.copy_login is on. Nothing else of the state is.
	Credentials []string
}

// LoginSuffix ends the name of an agent's login service: claude-login.
const LoginSuffix = "-login"

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
  "tools": {"sandbox": false},
  // agentbox-request's MCP server: the agent asks the person at the host
  // for a destination that the sandbox refuses (docs/approvals.md).
  "mcpServers": {"agentbox": {"command": {{json (index .RequestMCP 0)}}, "args": [{{json (index .RequestMCP 1)}}]}}
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
		Files:     []File{{ClaudeManagedSettings, claudeManagedSettings}, {ClaudeManagedMCP, claudeManagedMCP}},
		// /login: the OAuth token exchange and the account's profile.
		Login:       []string{"claude.ai", "console.anthropic.com", "platform.claude.com"},
		Credentials: []string{".credentials.json"},
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
		Files:     []File{{CodexSystemConfig, codexConfig}},
		// codex login --device-auth: the device code and the token exchange.
		Login:       []string{"auth.openai.com"},
		Credentials: []string{"auth.json"},
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
		// /login: GitHub's device flow. The token lands in the system's
		// keychain or in config.json beside the settings: not copied.
		Login: []string{"api.github.com", "github.com"},
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
		// Sign in with Google (NO_BROWSER=true prints the URL): the token
		// exchange and the account's user info.
		Login:       []string{"accounts.google.com", "oauth2.googleapis.com", "www.googleapis.com"},
		Credentials: []string{"google_accounts.json", "oauth_creds.json"},
	},
	{Name: "none", BaseImage: DefaultEgressImage},
	{
		Name:      "opencode",
		Title:     "OpenCode",
		Package:   "opencode-ai",
		BaseImage: nodeImage,
		StateDir:  Home + "/.local/share/opencode",
		// Measured with OpenCode 1.18: without these it fetches models.dev's
		// catalog (models.opencode.ai), default plugins and LSP servers.
		// Its openai provider reads OPENAI_BASE_URL itself.
		Env: []EnvVar{
			{"OPENCODE_DISABLE_AUTOUPDATE", "true"},
			{"OPENCODE_DISABLE_DEFAULT_PLUGINS", "true"},
			{"OPENCODE_DISABLE_LSP_DOWNLOAD", "true"},
			{"OPENCODE_DISABLE_MODELS_FETCH", "true"},
		},
		Domains: []string{"*.opencode.ai", "models.dev", "opencode.ai"},
		// opencode auth login stores every provider's key or token here;
		// the login reaches the provider's own names (add its service).
		Credentials: []string{"auth.json"},
	},
}

// ClaudeManagedSettings is Claude Code's managed settings file: the image
// owns it, and settings of the user's or the project's cannot loosen it.
const ClaudeManagedSettings = "/etc/claude-code/managed-settings.json"

// claudeManagedSettings turns off Claude Code's permission prompts, so that
// claude -p runs its tools unattended: the sandbox, not the CLI's prompts,
// is the boundary. JSON has no comments: the generated-file header is the
// value of a "//" key, which Claude Code ignores.
const claudeManagedSettings = `{"//":{{json header}},"permissions":{"defaultMode":"bypassPermissions"},"skipDangerousModePermissionPrompt":true}
`

// ClaudeManagedMCP is Claude Code's managed MCP configuration: its servers
// are the only ones Claude Code loads.
const ClaudeManagedMCP = "/etc/claude-code/managed-mcp.json"

// claudeManagedMCP registers agentbox-request's MCP server
// (docs/approvals.md): the agent asks the person at the host for a
// destination that the sandbox refuses.
const claudeManagedMCP = `{"//":{{json header}},"mcpServers":{"agentbox":{"type":"stdio","command":{{json (index .RequestMCP 0)}},"args":[{{json (index .RequestMCP 1)}}]}}}
`

// CodexSystemConfig is Codex's system configuration file: the image owns it,
// while ~/.codex (CODEX_HOME, where a user's config.toml would override it)
// is the state volume, which hides whatever the image has there.
const CodexSystemConfig = "/etc/codex/config.toml"

// codexConfig is Codex's system configuration (measured with Codex 0.171:
// without it, Codex ignores OPENAI_BASE_URL and looks up chatgpt.com,
// ab.chatgpt.com, github.com and api.github.com).
const codexConfig = `# {{header}}
# Codex's system configuration in the agentbox sandbox. A config.toml in
# CODEX_HOME (the state volume) overrides it key by key.
{{- with index .Env "OPENAI_BASE_URL"}}

# The model endpoint, from OPENAI_BASE_URL in agentbox.yaml's env: Codex
# reads no base URL from its environment, only from a provider. The key is
# OPENAI_API_KEY's.
model_provider = "agentbox"
{{- end}}

# agentbox is the sandbox. Codex's own (Landlock, seccomp, bubblewrap) needs
# what the container refuses, and keeps the agent from writing .git: it
# could not commit.
sandbox_mode = "danger-full-access"

# Nothing the sandbox does not need: no update check (agentbox.lock pins
# the version), no analytics or feedback uploads, no plugin sync (it
# reaches github.com and api.github.com).
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
{{- with index .Env "OPENAI_BASE_URL"}}

[model_providers.agentbox]
name = "OPENAI_BASE_URL (agentbox.yaml)"
base_url = {{toml .}}
env_key = "OPENAI_API_KEY"
wire_api = "responses"
{{- end}}

# agentbox-request's MCP server: the agent asks the person at the host for a
# destination that the sandbox refuses (docs/approvals.md).
[mcp_servers.agentbox]
command = {{toml (index .RequestMCP 0)}}
args = [{{toml (index .RequestMCP 1)}}]
`

// services is the catalog of named domain groups, sorted by name. Every
// agent with domains is a service too, so `services: [claude]` lets an
// opencode sandbox reach Anthropic's API; and every agent with login names
// has a NAME-login service, which no policy carries unless it is listed.
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
		if len(a.Login) > 0 {
			all = append(all, Service{a.Name + LoginSuffix, a.Login})
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
