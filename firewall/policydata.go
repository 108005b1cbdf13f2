package firewall

import (
	"fmt"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/shquote"
)

// PolicyPath is where the egress program reads its profile's policy.bash.
const PolicyPath = "/etc/agentbox/policy.bash"

// policyFile is the profile's policy as the egress program reads it: bash
// assignments, nothing else (renderPolicyData).
const policyFile = "policy.bash"

// program is the egress program, the same for every policy: each file,
// where the egress image installs it, and how it is rendered.
var program = []struct {
	name, path string
	render     func() ([]byte, error)
}{
	{entrypointFile, EntrypointPath, renderEntrypoint},
	{commonFile, CommonPath, renderCommon},
	{dnsmasqCommon, DnsmasqCommonPath, renderDnsmasqCommon},
	{gitLuaFile, GatewayGitLua, func() ([]byte, error) { return GitLua(), nil }},
	{ulogdFile, UlogdPath, renderUlogd},
	{gatewayCommonFile, GatewayCommonPath, renderGatewayCommon},
}

// ProgramFiles are the files of Render's that every policy renders alike:
// the egress program (Program); the others are the profile's data.
var ProgramFiles = programNames()

func programNames() []string {
	var out []string
	for _, f := range program {
		out = append(out, f.name)
	}
	return out
}

// ProgramPath is where the egress image installs file name of the
// program; "" for a file that is not the program's.
func ProgramPath(name string) string {
	for _, f := range program {
		if f.name == name {
			return f.path
		}
	}
	return ""
}

// Program renders the egress program, the same for every policy: the
// files of ProgramFiles.
func Program() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range program {
		data, err := f.render()
		if err != nil {
			return nil, err
		}
		out[f.name] = data
	}
	return out, nil
}

// renderPolicyData renders policy.bash: what the entrypoint, the same for
// every profile, needs of normalized policy p. Each value on a line of its
// own, so that a change of one name shows as that name's line.
func renderPolicyData(p Policy) ([]byte, error) {
	var w policyWriter
	mode := string(p.Mode)
	if p.Mode == ModeAllowlist {
		mode = "allowlist"
	}
	w.line("# %s", Header)
	w.line("# This profile's policy as the egress program, the same for every")
	w.line("# profile, reads it at start: bash assignments, nothing else. What each")
	w.line("# value means: the program's comments (%s).", EntrypointPath)
	w.line("MODE=%s", mode)
	var names []string
	for _, d := range p.Domains {
		names = append(names, d.Name)
	}
	w.list("NAMES", names)
	w.list("NEVER_NAMES", p.NeverNames)
	w.line("GATEWAY=%d", flag(p.Gateway))
	if p.Gateway {
		if err := w.gateway(p); err != nil {
			return nil, err
		}
	}
	w.line("REQUESTS=%d", flag(p.Requests != nil))
	if p.Requests != nil {
		if err := w.requests(p); err != nil {
			return nil, err
		}
	}
	return []byte(w.String()), nil
}

// policyWriter writes policy.bash's lines.
type policyWriter struct{ strings.Builder }

func (w *policyWriter) line(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }

// list writes array name, a value a line.
func (w *policyWriter) list(name string, values []string) {
	if len(values) == 0 {
		w.line("%s=()", name)
		return
	}
	w.line("%s=(", name)
	for _, v := range values {
		w.line("\t%s", shquote.Word(v))
	}
	w.line(")")
}

// gateway writes the gateway's ports and keys.
func (w *policyWriter) gateway(p Policy) error {
	ports, err := gatewayPorts(p)
	if err != nil {
		return err
	}
	var ps []string
	for _, g := range ports {
		ps = append(ps, fmt.Sprint(g.Port))
	}
	w.line("GATEWAY_PORTS=(%s)", strings.Join(ps, " "))
	w.list("GATEWAY_KEYS", heldNames(p))
	return nil
}

// requests writes the request endpoint's settings and the never ranges.
func (w *policyWriter) requests(p Policy) error {
	s, err := requestSettingsOf(p)
	if err != nil {
		return err
	}
	w.line("REQUESTS_TIMEOUT=%d", s.timeout)
	w.line("REQUESTS_MAX_SECONDS=%d", s.max)
	w.list("NEVER_RANGES", s.ranges)
	return nil
}

// flag is 1 for true, 0 for false.
func flag(on bool) int {
	if on {
		return 1
	}
	return 0
}
