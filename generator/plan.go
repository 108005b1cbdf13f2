package generator

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// Plan is everything render needs: defaults applied, catalogs expanded,
// sets sorted and de-duplicated, images pinned from the lock.
type Plan struct {
	Name             string
	Agent            catalog.Agent
	AgentImage       images.Ref
	AgentVersion     string
	NPMSpec          string // package@version
	NPMTree          *npm.Tree
	NPMBins          []string // the CLI's executables, linked into /usr/local/bin
	NPMDir           string
	AgentApt         *AptPlan
	EgressApt        *AptPlan
	EgressImage      images.Ref
	Packages         []string
	UID, GID         int
	Home             string
	OwnedDirs        []string
	Env              []catalog.EnvVar
	Secrets          []string // names the agent takes from the environment of docker compose
	GitName          string   // the agent's commits' author and committer
	GitEmail         string
	Workspace        string
	Mounts           []Mount
	StateVolume      string
	CPUs             string
	Memory           string
	Pids             int
	Policy           firewall.Policy
	Extensions       []string
	DevcontainerName string
	Hidden           []string // workspace.hidden
	Kubernetes       *config.Kubernetes
	RunTimeout       time.Duration
	Profiles         []ProfilePlan
	DefaultProfile   string
	DefaultLocked    bool   // the default profile's filesystem is locked's (workspace-init runs)
	CloneDir         string // where workspace-init makes locked's clone
	InitUID          int    // workspace-init's uid and gid
	OutputDir        string
}

// Mount is one volume of the agent service.
type Mount struct {
	Type     string // bind or volume
	Source   string // relative to .agentbox/ for binds
	Target   string
	ReadOnly bool
	Create   bool // create a missing bind source
	NoCopy   bool // a volume that the image's directory must not fill (another service's to fill)
	Why      string
	Key      string      // the agentbox.yaml key that asks for it ("" for agentbox's own)
	Pos      yamlpos.Pos // where Key's value is written
}

// Rel returns a bind mount's source relative to the project directory ("."
// for the project itself).
func (m Mount) Rel() string {
	switch {
	case m.Source == "..":
		return "."
	case strings.HasPrefix(m.Source, "./"):
		return OutDir + "/" + strings.TrimPrefix(m.Source, "./")
	}
	return strings.TrimPrefix(m.Source, "../")
}

// catalogPorts are the ports of catalog domains (agents, services, IDE).
var catalogPorts = []uint16{config.HTTPSPort}

// plan applies defaults, expands catalogs and pins images from lock (nil
// when there is no lock file). Problems are recorded in errs.
func plan(cfg *config.Config, lock *lockfile.Lock, errs *yamlpos.Errors) *Plan {
	p := &Plan{
		Name:      cfg.Name,
		Agent:     cfg.Agent,
		UID:       cfg.UID,
		GID:       cfg.GID,
		Home:      catalog.Home,
		Workspace: cfg.Workspace,
		Memory:    cfg.Memory,
		Pids:      cfg.Pids,
	}
	p.DevcontainerName = p.Name + " (agentbox)"
	p.Hidden = cfg.Hidden
	p.Kubernetes, p.RunTimeout = cfg.Kubernetes, cfg.RunTimeout
	specs := cfg.ImageSpecs()
	p.AgentImage = pin(specs[0], lock, errs)
	p.EgressImage = pin(specs[1], lock, errs)
	p.pinAgentCLI(cfg, lock, errs)
	p.AgentApt = aptPlan(specs[0], agentPackages(cfg, specs[0]), cfg.Agent.Package != "", lock, errs)
	p.EgressApt = aptPlan(specs[1], egressPackages(specs[1]), false, lock, errs)
	p.Packages = sortedUnique(append(slices.Clone(config.BasePackages), cfg.Packages...)) // no two versions of one: validateConfig
	p.Env = mergeEnv(cfg.Agent.Env, cfg.Env)
	p.Secrets = cfg.Secrets
	p.GitName, p.GitEmail = config.GitIdentity(cfg)
	if cfg.CPUs > 0 {
		p.CPUs = strconv.FormatFloat(cfg.CPUs, 'f', -1, 64)
	}
	p.CloneDir, p.InitUID, p.OutputDir = CloneDir, InitUID, OutputDir
	p.OwnedDirs = []string{catalog.Home, cfg.Workspace, OutputDir}
	if cfg.Agent.StateDir != "" {
		p.StateVolume = AgentStateVolume
		p.OwnedDirs = append(p.OwnedDirs, cfg.Agent.StateDir)
	}
	slices.Sort(p.OwnedDirs)
	p.Mounts = mounts(cfg, WorkspaceVolume, p.StateVolume)
	p.Policy = policy(cfg)
	p.DefaultProfile = cfg.DefaultProfile
	for i := range cfg.Profiles {
		pp := profilePlan(cfg, &cfg.Profiles[i], p.StateVolume)
		pp.Keys = planKeys(cfg, &pp, errs)
		planForges(cfg, &pp, errs)
		p.Profiles = append(p.Profiles, pp)
		p.DefaultLocked = p.DefaultLocked || cfg.Profiles[i].Name == cfg.DefaultProfile && cfg.Profiles[i].Locked
	}
	p.Extensions = extensions(cfg)
	return p
}

// pinAgentCLI pins the agent CLI's npm package and its tree from the lock.
func (p *Plan) pinAgentCLI(cfg *config.Config, lock *lockfile.Lock, errs *yamlpos.Errors) {
	pkg := cfg.Agent.Package
	if pkg == "" {
		return
	}
	v, ok := lock.Version(pkg)
	if !ok {
		errs.Add(cfg.AgentPos, "agent", "npm package %q has no version in %s; run \"agentbox bump\"", pkg, lockfile.File)
	}
	p.AgentVersion, p.NPMSpec = v, pkg+"@"+v
	if t, hasTree := lock.Tree(pkg); hasTree {
		p.NPMTree, p.NPMDir = t, NPMDir
		p.NPMBins = slices.Sorted(maps.Keys(t.Packages["node_modules/"+pkg].Bin))
		if len(p.NPMBins) == 0 {
			errs.Add(cfg.AgentPos, "agent", "%s as pinned in %s has no executable (\"bin\")", p.NPMSpec, lockfile.File)
		}
	} else if ok {
		errs.Add(cfg.AgentPos, "agent", "%s pins %s but not its dependency tree (an older agentbox wrote it); run \"agentbox bump\"", lockfile.File, p.NPMSpec)
	}
}

// extensions are the VS Code extensions of the Dev Container: the
// configured ones and the agent's; none without VS Code.
func extensions(cfg *config.Config) []string {
	if cfg.IDE != "vscode" {
		return nil
	}
	exts := slices.Clone(cfg.Extensions)
	if cfg.Agent.Extension != "" {
		exts = append(exts, cfg.Agent.Extension)
	}
	return sortedUniqueFold(exts)
}

// pin returns the image with its digest: the one written in agentbox.yaml,
// else the lock's.
func pin(s config.ImageSpec, lock *lockfile.Lock, errs *yamlpos.Errors) images.Ref {
	if s.Ref.Pinned() {
		return s.Ref
	}
	d, ok := lock.Digest(s.Ref)
	if !ok {
		why := "is not pinned in " + lockfile.File
		if lock == nil {
			why = "is not pinned: " + lockfile.File + " does not exist"
		}
		errs.Add(s.Pos, s.Path, "%s %s; run \"agentbox bump\"", s.What, why)
	}
	return s.Ref.WithDigest(d)
}

// OriginDir is where the agent container sees the host repository's git
// database, read-only, with its config replaced by GitConfigMask. The
// workspace entrypoint clones it into the workspace volume.
const OriginDir = "/run/agentbox/origin"

// WorkspaceVolume is the named volume that holds the agent's clone;
// AgentStateVolume the agent's state. A profile's are named by
// ProfileVolume.
const (
	WorkspaceVolume  = "workspace"
	AgentStateVolume = "agent-state"
)

// mounts are the agent service's volumes. The project directory itself is
// not among them: the agent works in its own clone on a volume, and nothing
// it writes lands on the host (agentbox fetch brings its commits back as
// data). They do not depend on the project's state on disk, so every clone
// of the project generates the same compose file.
func mounts(cfg *config.Config, workspaceVolume, stateVolume string) []Mount {
	ms := []Mount{
		{Type: "volume", Source: workspaceVolume, Target: cfg.Workspace,
			Why: "the agent's clone of the project (agentbox fetch brings its commits back)"},
		{Type: "bind", Source: "../.git", Target: OriginDir, ReadOnly: true,
			Why: "read-only: the project's git database, which the clone is made from"},
		{Type: "bind", Source: "./" + path.Base(GitConfigMask), Target: OriginDir + "/config", ReadOnly: true,
			Why: "the project's git config (remote URLs and tokens, hooks paths) stays on the host"},
	}
	if stateVolume != "" {
		ms = append(ms, Mount{Type: "volume", Source: stateVolume, Target: cfg.Agent.StateDir,
			Why: "the agent's state (credentials, history) survives restarts"})
	}
	return ms
}

func mergeEnv(fromCatalog, user []catalog.EnvVar) []catalog.EnvVar {
	byName := map[string]string{}
	for _, e := range fromCatalog {
		byName[e.Name] = e.Value
	}
	for _, e := range user {
		byName[e.Name] = e.Value
	}
	out := make([]catalog.EnvVar, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, catalog.EnvVar{Name: name, Value: byName[name]})
	}
	return out
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// sortedUniqueFold sorts ignoring ASCII case and drops duplicates that
// differ only in ASCII case, keeping the first spelling (VS Code extension
// ids). Only ASCII folds: strings.EqualFold would take U+212A KELVIN SIGN
// for a k.
func sortedUniqueFold(s []string) []string {
	out := slices.Clone(s)
	slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(validate.LowerASCII(a), validate.LowerASCII(b)) })
	return slices.CompactFunc(out, func(a, b string) bool { return validate.LowerASCII(a) == validate.LowerASCII(b) })
}

// AnyGateway says whether some profile's egress runs the gateway, and so
// the egress image links its configuration.
func (p *Plan) AnyGateway() bool {
	return slices.ContainsFunc(p.Profiles, func(pp ProfilePlan) bool { return pp.Policy.HasGateway() })
}

// Default is the plan of the default profile; the zero ProfilePlan if p
// has none (a Plan made by hand).
func (p *Plan) Default() ProfilePlan {
	for _, pp := range p.Profiles {
		if pp.Name == p.DefaultProfile {
			return pp
		}
	}
	return ProfilePlan{}
}
