package config

import (
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// ConfigFile is the name of the configuration file.
const ConfigFile = "agentbox.yaml"

// The wire structs mirror agentbox.yaml key by key; pointers tell "not set"
// from a zero value. The jsonschema tags feed the published JSON Schema.

type wireFile struct {
	Version      *int                   `yaml:"version" jsonschema:"Schema version; must be 1."`
	Name         *string                `yaml:"name" jsonschema:"Compose project name (lower-case letters, digits, - and _). Default: the directory name, sanitized."`
	Agent        *string                `yaml:"agent" jsonschema:"The agent CLI to install: claude, codex, gemini, opencode, copilot or none. Default: none."`
	Image        wireImage              `yaml:"image" jsonschema:"The agent image."`
	Egress       wireEgress             `yaml:"egress" jsonschema:"The egress (firewall) image."`
	Network      wireNetwork            `yaml:"network" jsonschema:"What the sandbox may reach. Everything else is blocked."`
	Resources    wireResources          `yaml:"resources" jsonschema:"Limits for the agent container."`
	Env          map[string]string      `yaml:"env" jsonschema:"Extra environment variables for the agent."`
	Secrets      []string               `yaml:"secrets" jsonschema:"Names of environment variables (API keys, tokens) that the agent gets from the host: agentbox up passes them to the sandbox and agentbox run to each task, from the environment of agentbox or the user's secrets file (XDG_CONFIG_HOME/agentbox/secrets.env). Only the names are in the generated files. Not AGENTBOX_*, nor a name set in env or by the agent's catalog entry."`
	Workspace    wireWorkspace          `yaml:"workspace" jsonschema:"The agent's copy of the project, and what of its work may come back."`
	Devcontainer wireDevcontainer       `yaml:"devcontainer" jsonschema:"The Dev Container definition."`
	Verify       wireVerify             `yaml:"verify" jsonschema:"Targets of the network probes of agentbox verify."`
	Run          wireRun                `yaml:"run" jsonschema:"Tasks of agentbox run, each in its own sandbox. Changes none of the generated files."`
	Elevation    wireElevation          `yaml:"elevation" jsonschema:"Limits of agentbox allow (timed grants of an address or CIDR). Changes none of the generated files."`
	Profile      *string                `yaml:"profile" jsonschema:"The default profile (trust tier): what agentbox up without --profile and the Dev Container start. Default: balanced."`
	Profiles     map[string]wireProfile `yaml:"profiles" jsonschema:"Your own profiles (trust tiers), each derived from a built-in one: locked, balanced or open."`
	Git          wireGit                `yaml:"git" jsonschema:"The identity of the agent's commits (author and committer), set in the agent image, and the forges whose git goes through the gateway's front door. Default: the agent's own identity, such as the name Claude Code (agentbox) and the email claude@agentbox.invalid."`
	Kubernetes   wireKubernetes         `yaml:"kubernetes" jsonschema:"Run the sandbox on a Kubernetes cluster too: generate writes a Pod and a Job template under .agentbox/kubernetes/, and agentbox run --on kubernetes runs tasks as Jobs."`
}

// wireProfile is one entry of profiles.
type wireProfile struct {
	From      *string              `yaml:"from" jsonschema:"required,The built-in profile this one starts from: locked, balanced or open."`
	Network   *wireNetwork         `yaml:"network" jsonschema:"Replaces the network of the base profile (same shape as the top-level network). From locked or balanced: an allowlist of just this (from locked, without the agent's and the IDE's domains); from open: cidrs only, the ranges open refuses that it admits after all."`
	Resources wireResources        `yaml:"resources" jsonschema:"Limits for the agent container; a key not written keeps the top-level value."`
	Elevation *wireElevation       `yaml:"elevation" jsonschema:"Limits of agentbox allow under this profile; a key not written keeps the base's (locked: allowed false; the others: the top-level elevation)."`
	Workspace wireProfileWorkspace `yaml:"workspace" jsonschema:"Paths added, under this profile, to the top-level workspace.readonly and workspace.hidden."`
}

type wireProfileWorkspace struct {
	ReadOnly []string `yaml:"readonly" jsonschema:"More project paths whose changes agentbox fetch refuses from a sandbox or task of this profile."`
	Hidden   []string `yaml:"hidden" jsonschema:"More paths or globs that no tracked file may match when a sandbox of this profile starts (checked at every start)."`
}

type wireElevation struct {
	Allowed     *bool   `yaml:"allowed" jsonschema:"Whether agentbox allow may grant anything. Default: true."`
	MaxDuration *string `yaml:"max_duration" jsonschema:"The longest --for of a grant: whole hours, minutes and seconds such as 30m or 1h30m, at most 168h. Default: 1h."`
	// The request endpoint's (docs/approvals.md), compiled into the egress.
	RequestTimeout *string  `yaml:"request_timeout" jsonschema:"How long an agent's request for a grant (agentbox-request) waits for a person's answer before it times out: whole hours, minutes and seconds such as 10m, at most 24h. Default: 10m."`
	Never          []string `yaml:"never" jsonschema:"CIDRs (or addresses) that may never be granted, on top of the private, loopback, link-local, multicast and special ranges that agentbox always refuses; and domain names (example.com or *.example.com, each meaning the name and the names below it) that may never be granted, nor any name above or below them."`
}

type wireRun struct {
	Timeout    *string  `yaml:"timeout" jsonschema:"A task's deadline unless agentbox run --timeout names one: whole hours, minutes and seconds such as 30m or 1h30m, at most 168h. Default: 30m (or run.max_timeout if less)."`
	MaxTimeout *string  `yaml:"max_timeout" jsonschema:"The longest --timeout a task may ask for, same grammar. Default: 4h."`
	Env        []string `yaml:"env" jsonschema:"Names of environment variables agentbox run passes from the host's environment into each task's agent, read at run time (credentials stay out of the repository). Not AGENTBOX_*, nor a name set in env or listed in secrets (which tasks get too)."`
	CopyLogin  *bool    `yaml:"copy_login" jsonschema:"Copy the agent's login (its credentials files, such as claude's .credentials.json) from the sandbox's state volume into each task's fresh one, read-only from the sandbox and never back. Default: false."`
}

type wireGit struct {
	Name   *string     `yaml:"name" jsonschema:"The name of the agent's commits. Default: the agent CLI's name followed by (agentbox), such as Claude Code (agentbox); Agent (agentbox) for agent none."`
	Email  *string     `yaml:"email" jsonschema:"The email address of the agent's commits. Default: AGENT@agentbox.invalid, such as claude@agentbox.invalid."`
	Forges []wireForge `yaml:"forges" jsonschema:"Git forges whose HTTPS git goes through the gateway's front door (profiles with the gateway): the agent fetches any public repository, fetches with your token only the repositories listed, and pushes only to the branches push lists. github.com has a front door whenever a profile allows it, listed or not (then: no token, no push, and direct TLS to github.com still allowed, which agents' logins use; listed, it is refused)."`
}

// wireForge is one entry of git.forges.
type wireForge struct {
	Host  string     `yaml:"host" jsonschema:"required,The forge's name, such as github.com: allowed on port 443 by the default profile. Direct TLS to it is refused (its web pages and logins too); its git goes through the front door."`
	Token *string    `yaml:"token" jsonschema:"The variable of secrets or run.env that holds your token for the forge: the gateway holds it and adds it to the requests of repos and push's repositories; the agent never gets it. Default: none (public repositories only, no push)."`
	Repos []string   `yaml:"repos" jsonschema:"Repositories (owner/name) fetched with the token. push's repositories are added. Default: none: agentbox reads no git remote, so the generated files depend on agentbox.yaml alone."`
	Push  []wirePush `yaml:"push" jsonschema:"Repositories the agent may push to, and the branches. Default: none: every push is refused."`
}

// wirePush is one entry of git.forges[].push.
type wirePush struct {
	Repo     string   `yaml:"repo" jsonschema:"required,The repository (owner/name)."`
	Branches []string `yaml:"branches" jsonschema:"required,Patterns of the branches the agent may push to (without refs/heads/); * matches any characters but /, such as agent/*. Tags, other refs and deletions are never pushed."`
}

type wireVerify struct {
	Allowed         *string `yaml:"allowed" jsonschema:"host:port (a name or an IP address) that must connect. Default: the first allowed name, on its first port."`
	UnlistedName    *string `yaml:"unlisted_name" jsonschema:"A name that must not resolve. Default: example.com (or .net, .org if allowed)."`
	UnlistedAddress *string `yaml:"unlisted_address" jsonschema:"IPv4 address:port that must be refused. Default: 1.1.1.1:443."`
	Resolver        *string `yaml:"resolver" jsonschema:"IPv4 address of another DNS resolver, whose answers must be the filter's. Default: 1.1.1.1."`
	IPv6Address     *string `yaml:"ipv6_address" jsonschema:"[IPv6 address]:port that must be refused. Default: [2606:4700:4700::1111]:443."`
	MetadataAddress *string `yaml:"metadata_address" jsonschema:"IPv4 address:port of the cloud metadata service, which must be refused. Default: 169.254.169.254:80."`
}

type wireImage struct {
	Base     *string  `yaml:"base" jsonschema:"Base image as repo:tag (optionally @sha256:...). Default: the agent's catalog image."`
	Packages []string `yaml:"packages" jsonschema:"Extra Debian packages (name or name=version)."`
	User     wireUser `yaml:"user" jsonschema:"The non-root user the agent runs as."`
}

type wireUser struct {
	UID *int `yaml:"uid" jsonschema:"User id. Default: 1000."`
	GID *int `yaml:"gid" jsonschema:"Group id. Default: the uid."`
}

type wireEgress struct {
	Image *string `yaml:"image" jsonschema:"Base image of the egress container. Default: debian:bookworm-slim."`
}

type wireNetwork struct {
	Services []string     `yaml:"services" jsonschema:"Catalog services to allow: github, vscode, jetbrains, pypi, crates, or an agent name."`
	Domains  []wireDomain `yaml:"domains" jsonschema:"Domains to allow: a name (also admits its subdomains), *.name, or {host, ports}."`
	CIDRs    []wireCIDR   `yaml:"cidrs" jsonschema:"Address ranges to allow: {cidr, ports} or a CIDR string."`
	Ports    []int        `yaml:"ports" jsonschema:"Default TCP ports for domains and CIDRs that name none. Default: [443]."`
}

// wireDomain is "example.com", "*.example.com" or {host: example.com, ports: [443]}.
type wireDomain struct {
	Host  string `yaml:"host" jsonschema:"required,Domain name or *.name."`
	Ports []int  `yaml:"ports" jsonschema:"TCP ports. Default: network.ports."`
}

// wireCIDR is "198.18.0.0/24" or {cidr: 198.18.0.0/24, ports: [443]}.
type wireCIDR struct {
	CIDR  string `yaml:"cidr" jsonschema:"required,An IPv4 or IPv6 prefix, or a single address."`
	Ports []int  `yaml:"ports" jsonschema:"TCP ports. Default: network.ports."`
}

type wireResources struct {
	CPUs   *float64 `yaml:"cpus" jsonschema:"CPU limit (e.g. 2 or 1.5). Default: no limit."`
	Memory *string  `yaml:"memory" jsonschema:"Memory limit such as 4g or 512m. Default: 4g."`
	Pids   *int     `yaml:"pids" jsonschema:"Process limit. Default: 1024."`
}

type wireWorkspace struct {
	Path     *string   `yaml:"path" jsonschema:"Where the agent's clone of the project is, in the agent container. Default: /workspace."`
	ReadOnly []string  `yaml:"readonly" jsonschema:"Extra project paths whose changes agentbox fetch refuses to bring back."`
	Writable []string  `yaml:"writable" jsonschema:"Protected paths (.vscode, .claude, ...) whose changes agentbox fetch may bring back anyway."`
	Hidden   *[]string `yaml:"hidden" jsonschema:"Paths or globs that must never reach the sandbox: agentbox up refuses to start while a tracked file matches. A pattern without / matches a file name at any depth. Default: [.env, .env.*]."`
}

type wireDevcontainer struct {
	IDE        *string  `yaml:"ide" jsonschema:"vscode or none. Default: vscode."`
	Extensions []string `yaml:"extensions" jsonschema:"Extra VS Code extensions (publisher.name)."`
}

// UnmarshalNode accepts the string form as well as the mapping form.
func (w *wireDomain) UnmarshalNode(d *yamlpos.Decoder, n *yaml.Node, path string) {
	type plain wireDomain
	scalarOrStruct(d, n, path, &w.Host, (*plain)(w))
}

// UnmarshalNode accepts the string form as well as the mapping form.
func (w *wireCIDR) UnmarshalNode(d *yamlpos.Decoder, n *yaml.Node, path string) {
	type plain wireCIDR
	scalarOrStruct(d, n, path, &w.CIDR, (*plain)(w))
}

// scalarOrStruct decodes a plain string into *s, or a mapping into the struct.
func scalarOrStruct(d *yamlpos.Decoder, n *yaml.Node, path string, s *string, v any) {
	if n.Kind == yaml.ScalarNode {
		if text, ok := d.Scalar(n, path, "!!str", "a string or a mapping"); ok {
			*s = text
		}
		return
	}
	d.DecodeInto(n, path, v)
}
