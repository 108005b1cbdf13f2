package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"text/template"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/settings"
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
	// RequestScript is agentbox-request in the agent image: the agent asks
	// the person at the host for a grant (docs/approvals.md).
	RequestScript = AgentProgramDir + "/agentbox-request.sh"
	// RequestMCPFile is its MCP server, in the images of agents on node
	// (RequestMCPScript).
	RequestMCPFile = AgentProgramDir + "/agentbox-request-mcp.js"
	// GitConfigMask replaces the host repository's .git/config in the
	// sandbox: a git config file with comments only.
	GitConfigMask = OutDir + "/git-config"
	// LocalDir is the user's own part of the build context, not committed
	// (LocalIgnore): agentbox build, up and run write LocalCA there, the
	// certificates of the settings' ca_certificates, which the agent image
	// copies, so that their content keys its CA step for every build of
	// the checkout, the Dev Containers CLI's included.
	LocalDir     = OutDir + "/" + localDirName
	LocalIgnore  = LocalDir + "/.gitignore"
	LocalCA      = LocalDir + "/" + localCAName
	localDirName = "local"
	localCAName  = "ca.pem"
)

// funcs are the template functions: hermetic, and each quotes for one syntax.
var funcs = template.FuncMap{
	"header":  func() string { return Header },
	"shq":     shquote.Word,
	"words":   shquote.Words,
	"json":    jsonString,
	"yamlstr": composeString,
	"join":    strings.Join,
	"dir":     path.Dir,
	"outrel":  func(p string) string { return strings.TrimPrefix(p, OutDir+"/") },
	"rel":     mountSource,
	// secretPath is where a RUN step reads a build secret it mounts.
	"secretPath": settings.SecretPath,
}

// mountSource is m's source in a compose file up (".." or "") from OutDir.
func mountSource(up string, m Mount) string {
	if m.Type != "bind" || up == "" {
		return m.Source
	}
	return path.Join(up, m.Source)
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
	PolicyPath      string
	CommonPath      string
	EntrypointPath  string
	UlogdPath       string
	GatewayPath     string
	HealthCommand   []string
	OriginDir       string
	WorkspaceEntry  string // where the image holds WorkspaceScript
	Hidden          []string
	EgressSysctls   []firewall.Sysctl
	FilterAddr      string
	WaitFirewallEnv string
	ReceiveEnv      string
	RequestAddr     string // the egress's request endpoint
	RequestPort     int
	RequestCommand  string // where the image holds RequestScript
	RequestMCP      string // where it holds RequestMCPFile
	GatewayReadyEnv string // keys.go
	KeysReadyPath   string

	// The profiles.
	Profile              ProfilePlan // the compose file's
	Context              string      // the compose file's way to OutDir
	Up                   string      // "" or ".."
	InitMounts           []Mount     // workspace-init's volumes
	ProfileEnv           string
	HostAddrsEnv         string
	HiddenEnv            string
	ProfileLabel         string
	FreshCloneEnv        string
	ProfileSelector      string
	EgressProgram        ProgramStep // the egress image's step that takes its program
	AgentProgram         ProgramStep // the agent image's
	ImageProfileSelector string
	ImageProfilesDir     string
	ImageProfileLink     string

	// Builds: the secrets and the CA (internal/settings), and the proxy
	// variables the agent's environment blanks.
	SecretCA, SecretNPMRC         string
	SecretCAPath, SecretNPMRCPath string
	BuildCAEnv, BuildNPMRCEnv     string
	LocalDir, LocalCAName         string
	LocalCA, LocalIgnore          string
	DebianSecrets                 []settings.SourceSecret
	NPMSecret                     settings.SourceSecret
	CAFile, CADir                 string
	ProxyBlank                    []string
}

// CAFile is where the agent image keeps the settings' ca_certificates
// (empty without any), named by NODE_EXTRA_CA_CERTS for npm and the agent
// CLIs, which use Node's own roots; the system's trust store gets a copy
// of each certificate (/usr/local/share/ca-certificates/agentbox-N.crt).
const CAFile = "/usr/local/share/agentbox/ca.pem"

// proxyVars are the proxy variables docker compose copies from
// ~/.docker/config.json into every container it creates.
var proxyVars = []string{"ALL_PROXY", "FTP_PROXY", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY",
	"all_proxy", "ftp_proxy", "https_proxy", "http_proxy", "no_proxy"}

// proxyBlank are the proxy variables the agent's environment sets empty:
// those agentbox.yaml does not set (env or secrets).
func proxyBlank(p *Plan) []string {
	set := map[string]bool{}
	for _, e := range p.Env {
		set[e.Name] = true
	}
	for _, n := range p.Secrets {
		set[n] = true
	}
	var out []string
	for _, v := range proxyVars {
		if !set[v] {
			out = append(out, v)
		}
	}
	return out
}

// render turns a plan into file contents. It is pure: the same plan gives
// the same bytes.
func render(p *Plan) (map[string][]byte, error) {
	v := newView(p)
	files := map[string][]byte{
		LocalIgnore: []byte("# " + Header + "\n# The user's own certificates (agentbox build, up and run write them): not\n# committed.\n" + localCAName + "\n"),
	}
	if err := renderPrograms(files, &v); err != nil {
		return nil, err
	}
	for path, name := range map[string]string{
		AgentDockerfile:  "agent.Dockerfile.tmpl",
		EgressDockerfile: "egress.Dockerfile.tmpl",
		DevcontainerFile: "devcontainer.json.tmpl",
		WorkspaceScript:  "workspace.sh.tmpl",
		GitConfigMask:    "git-config.tmpl",
		ProfileSelector:  "egress-profile.sh.tmpl",
	} {
		if err := execute(files, path, name, v); err != nil {
			return nil, err
		}
	}
	if err := renderAgentFiles(files, p); err != nil {
		return nil, err
	}
	if p.NPMTree != nil {
		files[NPMPackageFile] = p.NPMTree.PackageJSON(Header)
		files[NPMLockFile] = p.NPMTree.PackageLock(Header)
	}
	for _, pp := range p.Profiles {
		if err := renderProfile(files, v, pp); err != nil {
			return nil, err
		}
	}
	if err := renderKubernetes(p, v, files); err != nil {
		return nil, err
	}
	return files, nil
}

// renderProfile renders profile pp's compose file and firewall program.
func renderProfile(files map[string][]byte, v view, pp ProfilePlan) error {
	plan := *v.Plan
	plan.CPUs, plan.Memory, plan.Pids = pp.CPUs, pp.Memory, pp.Pids
	plan.Mounts, plan.StateVolume = pp.Mounts, pp.StateVolume
	if len(pp.Hidden) > 0 {
		plan.Env = mergeEnv(plan.Env, []catalog.EnvVar{{Name: HiddenEnv, Value: strings.Join(pp.Hidden, " ")}})
	}
	// The sandbox's agent: the keys of secrets (run.env's are the tasks',
	// whose compose override sets theirs: taskKeyEnv).
	keys := sandboxKeys(pp.Keys, plan.Secrets)
	plan.Env, plan.Secrets = withHeldKeys(plan.Env, plan.Secrets, keys)
	// The forges' front doors and tokens (forges.go).
	plan.Env, plan.Secrets = withForges(plan.Env, plan.Secrets, pp.Policy.Forges, len(keys) > 0)
	v.Plan, v.Profile, v.Context, v.Up = &plan, pp, ".", ""
	if pp.Compose != ComposeFile {
		v.Context, v.Up = "..", ".."
	}
	if pp.Locked {
		v.InitMounts = initMounts(pp.Name, v.Plan.Workspace)
	}
	if err := execute(files, pp.Compose, "docker-compose.yml.tmpl", v); err != nil {
		return err
	}
	fw, err := firewall.Render(pp.Policy)
	if err != nil {
		return fmt.Errorf("rendering the firewall of profile %s: %w", pp.Name, err)
	}
	for name, data := range fw {
		if !slices.Contains(firewall.ProgramFiles, name) { // render's, once
			files[pp.Egress+"/"+name] = data
		}
	}
	return nil
}

// initMounts are workspace-init's volumes under locked profile profile:
// the profile's clone volume, writable, and the project's git database as
// the agent of another profile has it.
func initMounts(profile, workspace string) []Mount {
	ms := []Mount{{Type: "volume", Source: ProfileVolume(profile, LockedVolume), Target: CloneDir,
		Why: "the clone it makes, which the agent sees read-only"}}
	for _, m := range mounts(&config.Config{Workspace: workspace}, WorkspaceVolume, "") {
		if m.Type == "bind" {
			ms = append(ms, m)
		}
	}
	return ms
}

// execute renders template name with v into files[path].
func execute(files map[string][]byte, path, name string, v view) error {
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, name, v); err != nil {
		return fmt.Errorf("rendering %s: %w", path, err)
	}
	files[path] = b.Bytes()
	return nil
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

// newView is what the templates see of plan p: the plan, and the names,
// paths and ids the firewall, the settings and the sandbox agree on.
func newView(p *Plan) view {
	return view{
		Plan:            p,
		EgressPackages:  firewall.Packages,
		DNSUID:          firewall.DNSUID,
		DNSUser:         firewall.DNSUser,
		RulesPath:       firewall.RulesPath,
		DnsmasqPath:     firewall.DnsmasqPath,
		PolicyPath:      firewall.PolicyPath,
		CommonPath:      firewall.CommonPath,
		EntrypointPath:  firewall.EntrypointPath,
		UlogdPath:       firewall.UlogdPath,
		GatewayPath:     firewall.GatewayConfigPath,
		HealthCommand:   firewall.HealthCommand,
		OriginDir:       OriginDir,
		WorkspaceEntry:  "/usr/local/bin/agentbox-workspace",
		Hidden:          p.Hidden,
		EgressSysctls:   firewall.Sysctls,
		FilterAddr:      firewall.FilterAddr,
		WaitFirewallEnv: WaitFirewallEnv,
		ReceiveEnv:      ReceiveEnv,
		RequestAddr:     firewall.RequestAddr,
		RequestPort:     firewall.RequestPort,
		RequestCommand:  "/usr/local/bin/agentbox-request",
		RequestMCP:      RequestMCPScript,
		GatewayReadyEnv: GatewayReadyEnv,
		KeysReadyPath:   firewall.KeysReadyPath,

		ProfileEnv:           ProfileEnv,
		HostAddrsEnv:         firewall.HostAddrsEnv,
		HiddenEnv:            HiddenEnv,
		ProfileLabel:         ProfileLabel,
		FreshCloneEnv:        FreshCloneEnv,
		ProfileSelector:      ProfileSelector,
		ImageProfileSelector: ImageProfileSelector,
		ImageProfilesDir:     ImageProfilesDir,
		ImageProfileLink:     ImageProfileLink,

		SecretCA:        settings.SecretCA,
		SecretNPMRC:     settings.SecretNPMRC,
		SecretCAPath:    settings.SecretCAPath,
		SecretNPMRCPath: settings.SecretNPMRCPath,
		BuildCAEnv:      settings.EnvBuildCA,
		BuildNPMRCEnv:   settings.EnvBuildNPMRC,
		LocalDir:        localDirName,
		LocalCAName:     localCAName,
		LocalCA:         LocalCA,
		LocalIgnore:     LocalIgnore,
		DebianSecrets:   settings.DebianSecrets,
		NPMSecret:       settings.NPMSecret,
		CAFile:          CAFile,
		CADir:           path.Dir(CAFile),
		ProxyBlank:      proxyBlank(p),
	}
}
