package config

import (
	"net/netip"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// Config is a validated agentbox.yaml. Everything downstream may assume its
// values are safe; defaults are applied by plan, not here.
type Config struct {
	Name        string
	Agent       catalog.Agent
	AgentPos    yamlpos.Pos
	Base        *images.Ref // nil: the agent's catalog image
	BasePos     yamlpos.Pos
	Packages    []string
	PackagesPos []yamlpos.Pos // where each of Packages is written
	UID, GID    int
	Egress      *images.Ref // nil: the default egress image
	EgressPos   yamlpos.Pos
	Services    []string
	Domains     []DomainRule
	CIDRs       []CIDRRule
	Ports       []uint16 // default ports
	CPUs        float64  // 0: no limit
	Memory      string
	Pids        int
	Env         []catalog.EnvVar // as written, sorted by name
	Secrets     []string         // names passed from the host to the sandbox and tasks, sorted
	SecretsPos  []yamlpos.Pos    // where each of Secrets is written
	Workspace   string
	ReadOnly    []string
	ReadOnlyPos []yamlpos.Pos // where each ReadOnly entry is written
	Writable    []string      // workspace.writable: protected paths whose changes fetch accepts, sorted
	WritablePos []yamlpos.Pos // where each of Writable is first written
	Hidden      []string      // workspace.hidden, defaults applied
	IDE         string
	Extensions  []string
	Verify      Verify     // as written; VerifyTargets applies the defaults
	GitName     string     // git.name as written, "" when not
	GitEmail    string     // git.email as written, "" when not
	GitForges   []GitForge // git.forges as written, repositories in lower case

	// The run section, defaults applied; agentbox run alone reads it.
	RunTimeout       time.Duration // a task's deadline without --timeout
	RunTimeoutPos    yamlpos.Pos   // zero when run.timeout is not written
	RunMaxTimeout    time.Duration // the longest --timeout allowed
	RunMaxTimeoutPos yamlpos.Pos   // zero when run.max_timeout is not written
	RunEnv           []string      // names passed from the host's environment, sorted
	RunEnvPos        []yamlpos.Pos // where each of RunEnv is written
	CopyLogin        bool          // run.copy_login
	CopyLoginPos     yamlpos.Pos   // zero when run.copy_login is not written

	// The elevation section, defaults applied; agentbox allow alone reads it.
	ElevationAllowed    bool
	ElevationAllowedPos yamlpos.Pos // zero when elevation.allowed is not written
	ElevationMax        time.Duration
	ElevationMaxPos     yamlpos.Pos // zero when elevation.max_duration is not written
	// ElevationRequestTimeout is how long an agent's request waits for an
	// answer (elevation.request_timeout).
	ElevationRequestTimeout    time.Duration
	ElevationRequestTimeoutPos yamlpos.Pos
	ElevationNever             []netip.Prefix // as written
	ElevationNeverPos          []yamlpos.Pos  // where each of ElevationNever is written

	// Kubernetes is the kubernetes section; nil when it is not written.
	Kubernetes *Kubernetes
	// The profiles (trust tiers): the built-ins and profiles:, sorted by
	// name, and the default one (profile:).
	Profiles          []Profile
	DefaultProfile    string
	DefaultProfilePos yamlpos.Pos // zero when profile is not written
	// ElevationNeverNames are the names of elevation.never (lower case,
	// without "*."), each standing for itself and the names below it.
	ElevationNeverNames    []string
	ElevationNeverNamesPos []yamlpos.Pos
}

// GitForge is one entry of git.forges: a forge whose git goes through the
// gateway's front door (docs/gateway.md, "Pushes scoped").
type GitForge struct {
	Host    string
	HostPos yamlpos.Pos
	Token   string // a name of secrets or run.env; "" for none
	Repos   []string
	Push    []GitPush
}

// GitPush is one entry of git.forges[].push.
type GitPush struct {
	Repo     string
	Branches []string
}

// DomainRule is one entry of network.domains.
type DomainRule struct {
	Name     string // without "*." and trailing dot
	Wildcard bool
	Ports    []uint16 // nil: the default ports
}

// CIDRRule is one entry of network.cidrs.
type CIDRRule struct {
	Prefix netip.Prefix
	Ports  []uint16 // nil: the default ports
}

// Defaults that apply when agentbox.yaml leaves a field out.
const (
	DefaultUID       = 1000
	DefaultMemory    = "4g"
	DefaultPids      = 1024
	DefaultWorkspace = "/workspace"
	DefaultIDE       = "vscode"
	// DefaultName is the compose project name of a file without one: a
	// constant, so that every checkout generates the same files. agentbox
	// init writes a name; two projects left without one are told apart at
	// run time (agentbox up and the workspace entrypoint refuse to mix them).
	DefaultName = "agentbox"
)

// BasePackages are installed in every agent image.
var BasePackages = []string{"ca-certificates", "git"}

// DefaultHidden are the paths no tracked file may match unless
// workspace.hidden says otherwise: environment files that usually hold
// secrets, but not the templates that projects commit on purpose.
var DefaultHidden = []string{".env", ".env.*", "!.env.example", "!.env.sample", "!.env.template"}

// DefaultPorts are the TCP ports of a domain or CIDR that names none.
var DefaultPorts = []uint16{HTTPSPort}

// HTTPSPort is the port of every catalog domain, and the default port of
// the user's domains and CIDRs.
const HTTPSPort uint16 = 443

// IDEs are the valid values of devcontainer.ide.
var IDEs = []string{"none", "vscode"}
