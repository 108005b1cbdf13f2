package verify

import (
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/generator"
)

// Var is one input of verify.sh, passed by name in its environment
// (docker compose exec -e NAME=VALUE); the phase is its only argument.
// verify.sh reads exactly these, a required one as ${NAME:?} and an
// optional one, not passed when empty, as ${NAME:-}
// (TestScriptReadsVars). Every value was validated when agentbox.yaml was
// loaded.
type Var struct {
	Name     string
	Optional bool
	value    func(in input) string
}

// input is what verify.sh's variables come from: the configuration, the
// running profile and its probe targets.
type input struct {
	cfg   *config.Config
	prof  *config.Profile
	t     config.Verify
	forge string // "HOST PORT": the profile's first forge and its front door; "" without
}

// Vars are verify.sh's inputs.
var Vars = []Var{
	{"AGENTBOX_VERIFY_WORKSPACE", false, func(in input) string { return in.cfg.Workspace }},
	{"AGENTBOX_VERIFY_STATE_DIR", true, func(in input) string {
		if in.prof.Locked {
			return ""
		}
		return in.cfg.Agent.StateDir
	}},
	{"AGENTBOX_VERIFY_ALLOWED", true, func(in input) string { return in.t.Allowed }},
	{"AGENTBOX_VERIFY_UNLISTED_NAME", false, func(in input) string { return in.t.UnlistedName }},
	{"AGENTBOX_VERIFY_UNLISTED_ADDRESS", false, func(in input) string { return in.t.UnlistedAddress }},
	{"AGENTBOX_VERIFY_RESOLVER", false, func(in input) string { return in.t.Resolver }},
	{"AGENTBOX_VERIFY_IPV6_ADDRESS", false, func(in input) string { return in.t.IPv6Address }},
	{"AGENTBOX_VERIFY_METADATA_ADDRESS", false, func(in input) string { return in.t.MetadataAddress }},
	{"AGENTBOX_VERIFY_MEMORY_BYTES", false, func(in input) string { return strconv.FormatInt(in.prof.MemoryBytes(), 10) }},
	{"AGENTBOX_VERIFY_PIDS", false, func(in input) string { return strconv.Itoa(in.prof.Pids) }},
	{"AGENTBOX_VERIFY_ORIGIN", false, func(input) string { return generator.OriginDir }},
	{"AGENTBOX_VERIFY_HIDDEN", true, func(in input) string { return strings.Join(in.cfg.HiddenPatterns(in.prof), "\n") }},
	{"AGENTBOX_VERIFY_NETWORK", false, func(in input) string { return networkMode(in.prof.Mode) }},
	{"AGENTBOX_VERIFY_FORGE", true, func(in input) string { return in.forge }},
	{"AGENTBOX_VERIFY_OUTPUT", true, func(in input) string {
		if in.prof.Locked {
			return generator.OutputDir
		}
		return ""
	}},
}

// networkMode names a firewall mode for verify.sh.
func networkMode(m firewall.Mode) string {
	if m == firewall.ModeAllowlist {
		return "allowlist"
	}
	return string(m)
}

// Env returns verify.sh's environment for profile prof of cfg:
// NAME=VALUE, in the order of Vars, each optional variable left out when
// empty.
func Env(cfg *config.Config, prof *config.Profile) []string {
	in := input{cfg: cfg, prof: prof, t: generator.ProfileVerifyTargets(cfg, prof), forge: firstForge(cfg, prof)}
	var env []string
	for _, v := range Vars {
		if val := v.value(in); val != "" || !v.Optional {
			env = append(env, v.Name+"="+val)
		}
	}
	return env
}

// firstForge is "HOST PORT" of profile prof's first git forge and the
// port of its front door on 127.0.0.1, or "" when it has none.
func firstForge(cfg *config.Config, prof *config.Profile) string {
	forges := generator.ProfileForges(cfg, generator.ProfilePolicy(cfg, prof))
	if len(forges) == 0 {
		return ""
	}
	return forges[0].Host + " " + strconv.Itoa(firewall.ForgeListeners(forges)[forges[0].Host])
}
