package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/shquote"
	"github.com/agentbox-dev/agentbox/templates"
)

// Header is the first comment of every generated file.
const Header = firewall.Header

// The files agentbox generates, relative to the project directory.
const (
	OutDir           = ".agentbox"
	AgentDockerfile  = OutDir + "/agent.Dockerfile"
	EgressDockerfile = OutDir + "/egress.Dockerfile"
	ComposeFile      = OutDir + "/docker-compose.yml"
	EgressDir        = OutDir + "/egress"
	// DevcontainerDir is shared with the user's own files: agentbox owns
	// devcontainer.json there (and refuses other configurations and .env).
	DevcontainerDir  = ".devcontainer"
	DevcontainerFile = DevcontainerDir + "/devcontainer.json"
	// WorkspaceScript is the agent image's entrypoint: it makes the clone.
	WorkspaceScript = OutDir + "/workspace.sh"
	// GitConfigMask replaces the host repository's .git/config in the
	// sandbox: a git config file with comments only.
	GitConfigMask = OutDir + "/git-config"
)

// funcs are the template functions: hermetic, and each quotes for one syntax.
var funcs = template.FuncMap{
	"header":  func() string { return Header },
	"shq":     shquote.Word,
	"words":   shquote.Words,
	"json":    jsonString,
	"yamlstr": composeString,
	"join":    strings.Join,
}

var tmpl = template.Must(template.New("agentbox").Option("missingkey=error").Funcs(funcs).ParseFS(templates.FS, "*.tmpl"))

// view is what the templates see: the plan and the firewall's constants.
type view struct {
	*Plan
	EgressPackages  []string
	DNSUID          int
	DNSUser         string
	RulesPath       string
	DnsmasqPath     string
	EntrypointPath  string
	UlogdPath       string
	HealthCommand   []string
	OriginDir       string
	WorkspaceEntry  string // where the image holds WorkspaceScript
	Hidden          []string
	EgressSysctls   []firewall.Sysctl
	FilterAddr      string
	WaitFirewallEnv string
	ReceiveEnv      string
}

// render turns a plan into file contents. It is pure: the same plan gives
// the same bytes.
func render(p *Plan) (map[string][]byte, error) {
	v := view{
		Plan:            p,
		EgressPackages:  firewall.Packages,
		DNSUID:          firewall.DNSUID,
		DNSUser:         firewall.DNSUser,
		RulesPath:       firewall.RulesPath,
		DnsmasqPath:     firewall.DnsmasqPath,
		EntrypointPath:  firewall.EntrypointPath,
		UlogdPath:       firewall.UlogdPath,
		HealthCommand:   firewall.HealthCommand,
		OriginDir:       OriginDir,
		WorkspaceEntry:  "/usr/local/bin/agentbox-workspace",
		Hidden:          p.Hidden,
		EgressSysctls:   firewall.Sysctls,
		FilterAddr:      firewall.FilterAddr,
		WaitFirewallEnv: WaitFirewallEnv,
		ReceiveEnv:      ReceiveEnv,
	}
	files := map[string][]byte{}
	for path, name := range map[string]string{
		AgentDockerfile:  "agent.Dockerfile.tmpl",
		EgressDockerfile: "egress.Dockerfile.tmpl",
		ComposeFile:      "docker-compose.yml.tmpl",
		DevcontainerFile: "devcontainer.json.tmpl",
		WorkspaceScript:  "workspace.sh.tmpl",
		GitConfigMask:    "git-config.tmpl",
	} {
		var b bytes.Buffer
		if err := tmpl.ExecuteTemplate(&b, name, v); err != nil {
			return nil, fmt.Errorf("rendering %s: %w", path, err)
		}
		files[path] = b.Bytes()
	}
	if p.NPMTree != nil {
		files[NPMPackageFile] = p.NPMTree.PackageJSON(Header)
		files[NPMLockFile] = p.NPMTree.PackageLock(Header)
	}
	fw, err := firewall.Render(p.Policy)
	if err != nil {
		return nil, fmt.Errorf("rendering the firewall: %w", err)
	}
	for name, data := range fw {
		files[EgressDir+"/"+name] = data
	}
	if err := renderKubernetes(p, v, files); err != nil {
		return nil, err
	}
	return files, nil
}

// ExecuteInit renders the commented agentbox.yaml that `agentbox init` writes.
func executeTemplate(name string, data any) ([]byte, error) {
	var b bytes.Buffer
	err := tmpl.ExecuteTemplate(&b, name, data)
	return b.Bytes(), err
}

// jsonString encodes s as a JSON string (no HTML escaping).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // a string always encodes
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// composeString encodes s as a double-quoted YAML scalar (a JSON string is
// one) with "$" doubled, so compose interpolates nothing in it.
func composeString(s string) string {
	return jsonString(strings.ReplaceAll(s, "$", "$$"))
}
