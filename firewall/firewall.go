package firewall

import (
	"fmt"
	"net/netip"
)

// Paths inside the egress image.
const (
	RulesPath = "/etc/agentbox/rules.nft"
	// CommonPath holds the counters, sets and chains of every rules.nft, which
	// includes it (common.nft.tmpl).
	CommonPath  = "/etc/agentbox/common.nft"
	DnsmasqPath = "/etc/agentbox/dnsmasq.conf"
	// DnsmasqCommonPath holds the settings of every dnsmasq.conf, which
	// reads it (dnsmasq-common.conf.tmpl).
	DnsmasqCommonPath = "/etc/agentbox/dnsmasq-common.conf"
	EntrypointPath    = "/usr/local/bin/agentbox-egress"
)

// The dedicated user dnsmasq runs as. The agent's uid must never equal DNSUID
// (the generator enforces it): the firewall lets only this uid reach the
// upstream resolvers, and exempts it from the DNS redirect.
const (
	DNSUser = "agentbox-dns"
	DNSUID  = 5353
)

// A task of agentbox run has a deadline, which the egress container keeps:
// the agent shares its pid namespace, and at DeadlineEnv (seconds since the
// epoch) the entrypoint closes egress, ends every process of AgentUIDEnv's
// uid, and exits with DeadlineExit, as timeout(1) does. The agent cannot
// signal, trace or outlive a root process of another container.
const (
	DeadlineEnv  = "AGENTBOX_DEADLINE"
	AgentUIDEnv  = "AGENTBOX_AGENT_UID"
	DeadlineExit = 124
	// DeadlineStayEnv=1 keeps the entrypoint running after the deadline
	// ended the agent, egress closed (a Kubernetes sidecar would be
	// restarted if it exited).
	DeadlineStayEnv = "AGENTBOX_DEADLINE_STAY"
)

// HostAddrsEnv names the host's addresses, separated by spaces or commas,
// in the egress container's environment (agentbox up and run set it
// through the compose file; a Kubernetes Pod takes its node's addresses
// from the downward API, status.hostIPs). The entrypoint refuses them in every mode unless a CIDR
// lists them, with the default gateways of the namespace, which it reads
// itself: the host serves on each, and under mode open a public one would
// pass as any other public address.
const HostAddrsEnv = "AGENTBOX_HOST_ADDRS"

// FilterAddr is where the filter resolver (dnsmasq) listens, on port 53.
const FilterAddr = filterAddr

// The sets of timed grants (agentbox allow): an address range and a TCP
// port per element, each with a timeout that the kernel enforces.
const (
	GrantSetV4 = "grant_v4"
	GrantSetV6 = "grant_v6"
	// GrantMaxSeconds is the longest grant the entrypoint takes: 7 days.
	GrantMaxSeconds = 7 * 24 * 3600
)

// Timed grants of names (agentbox allow NAME). Each granted name has a
// slot K, its own address sets (gn_K_v4, gn_K_v6) that the grant resolver
// fills, and one element (K << 8) . PORT per granted port in NameLiveSet,
// with the grant's timeout: the kernel accepts new connections to the
// slot's addresses, and keeps those it marked, only while the element is
// there.
const (
	NameLiveSet = "name_live"
	// NameGrantsMax is the most names granted at once.
	NameGrantsMax = 32
	// GrantDNSPort and the port after it are where the grant resolver, a
	// second dnsmasq that forwards the granted names and fills their sets,
	// listens on FilterAddr, below 1024 where the agent cannot bind: a new
	// one starts on the other port before the old one stops.
	GrantDNSPort = 54
	// NeverDNSPort is where the never filter listens on FilterAddr, UDP and
	// TCP: the grant resolver's forwarder to the upstream resolvers while
	// elevation.never names names, which refuses every answer that leads to
	// one (templates/neverdns.pl.tmpl). Below 1024 too.
	NeverDNSPort = GrantDNSPort + 2
)

// ProbeName is the name the entrypoint asks the filter resolver for to see
// that it answers (NXDOMAIN): the egress log's only refusal that is not the
// agent's.
const ProbeName = "agentbox-probe.invalid"

// dnsmasq sends its queries from source ports in DNSMinPort-DNSMaxPort, above
// the kernel's ephemeral range (32768-60999): conntrack cannot tell two
// sockets with the same addresses and ports apart, so the agent's lookups
// and dnsmasq's queries must never share a port.
const (
	DNSMinPort = 61000
	DNSMaxPort = 65535
)

// Sysctl is a kernel parameter that compose sets on the egress container.
type Sysctl struct{ Key, Value string }

// Sysctls are set on the egress container (compose's sysctls), whose network
// namespace the agent shares. Docker sets net.ipv4.ip_unprivileged_port_start
// to 0 unless told otherwise, which lets every uid bind port 53 on a
// loopback address, where a resolver listens behind Docker's DNAT: back to
// the kernel's 1024, so that only root and dnsmasq (CAP_NET_BIND_SERVICE)
// bind ports below 1024. The firewall refuses the agent's packets from port
// 53 anyway; this is a second wall.
var Sysctls = []Sysctl{portStart}

// portStart is the sysctl that the entrypoint checks: it warns when every
// uid may bind port 53.
var portStart = Sysctl{"net.ipv4.ip_unprivileged_port_start", "1024"}

// Packages lists the Debian packages the egress image installs (sorted).
var Packages = []string{"ca-certificates", "dnsmasq-base", "haproxy", "nftables", "ulogd2", "ulogd2-json"}

// HealthCommand is the compose healthcheck (exec form).
var HealthCommand = []string{EntrypointPath, healthArg}

// healthArg is the entrypoint's argument for the healthcheck.
const healthArg = "health"

// Header is the first comment line of every file generated from
// agentbox.yaml (the generator uses it too).
const Header = "Code generated by agentbox from agentbox.yaml; DO NOT EDIT."

// Keys of the map returned by Render.
const (
	rulesFile      = "rules.nft"
	commonFile     = "common.nft"
	dnsmasqFile    = "dnsmasq.conf"
	dnsmasqCommon  = "dnsmasq-common.conf"
	gitLuaFile     = "git.lua"
	entrypointFile = "entrypoint.sh"
	ulogdFile      = "ulogd.conf"
	gatewayFile    = "haproxy.cfg"
	// gatewayCommonFile is the egress program's part of HAProxy's
	// configuration (GatewayCommonPath).
	gatewayCommonFile = "haproxy-common.cfg"
)

// Policy is the egress policy the firewall enforces: in ModeAllowlist, TCP
// connections to the listed names (resolved at run time through the filter
// resolver) and CIDRs; Mode says what the other modes admit. Everything else
// is rejected.
type Policy struct {
	Mode    Mode     // what the firewall admits beyond loopback; "" is ModeAllowlist
	Domains []Domain // sorted by Name, unique; each admits the name AND every name below it
	CIDRs   []CIDR   // sorted (v4 before v6, then by address, then bits), prefixes masked
	// Never are ranges that no timed grant reaches (elevation.never), nor
	// the IPv6 forms that embed an IPv4 one of them: refused after what
	// the policy admits, before every grant. Masked, sorted like CIDRs.
	Never []netip.Prefix
	// NeverNames are names that no timed grant reaches (elevation.never),
	// with every name below them: the entrypoint refuses to grant a name
	// that covers one or lies below one, and their addresses, as the
	// grant resolver resolves them, are refused like Never. Sorted.
	NeverNames []string
	// Gateway sends the agent's TCP to the ports of allowed names through
	// the gateway (docs/gateway.md), which checks the name each connection
	// carries; Render then renders haproxy.cfg too. Only ModeAllowlist
	// with Domains has a gateway: the other modes have no names to check.
	Gateway bool
	// Requests runs the request endpoint (requests.go), where the agent
	// asks for a grant that a person answers; nil: none (a profile whose
	// elevation.allowed is false).
	Requests *Requests
	// Keys are the model credentials the gateway holds for the agent
	// (keys.go): only with the gateway.
	Keys []Key
	// Forges are the git forges whose HTTPS git goes through the
	// gateway's front door (forge.go): only with the gateway. Render then
	// renders git.lua too.
	Forges []Forge
}

// Mode is what a profile's firewall admits besides loopback.
type Mode string

// The modes of the trust tiers: locked has no network, balanced its
// allowlist, open every public destination.
const (
	// ModeAllowlist admits TCP to the policy's names and CIDRs (balanced).
	ModeAllowlist Mode = ""
	// ModeNone admits loopback only: the filter resolver answers every name
	// with NXDOMAIN and has no upstream; Domains and CIDRs must be empty
	// (locked).
	ModeNone Mode = "none"
	// ModeOpen admits TCP to every destination on every port except the
	// special ranges (private, link-local, metadata, ...) unless CIDRs
	// lists them; every name resolves through the filter resolver, which
	// logs it (open). Domains must be empty: every public name is admitted
	// already, and a name never opens a special range.
	ModeOpen Mode = "open"
)

// Domain admits a name and every name below it on some TCP ports.
type Domain struct {
	Name    string   // lower-case, validated RFC 1123 name, no "*." and no trailing dot
	Ports   []uint16 // sorted, unique, non-empty (TCP ports)
	Sources []string // sorted, for comments only, e.g. "agent claude", "service github", "network.domains"
}

// CIDR admits an address range on some TCP ports. It is allowed even when it
// lies in a private range.
type CIDR struct {
	Prefix  netip.Prefix // masked, valid
	Ports   []uint16     // sorted, unique, non-empty (TCP ports)
	Sources []string     // sorted, for comments only
}

// Render returns the four files of the firewall program keyed "rules.nft",
// "dnsmasq.conf", "entrypoint.sh" and "ulogd.conf". It re-validates p and
// returns an error rather than emit anything unsafe. The output depends on
// p only.
func Render(p Policy) (map[string][]byte, error) {
	p, err := normalize(p)
	if err != nil {
		return nil, fmt.Errorf("rendering firewall: %w", err)
	}
	rules, err := renderRules(p)
	if err != nil {
		return nil, err
	}
	dnsmasq, err := renderDnsmasq(p)
	if err != nil {
		return nil, err
	}
	data, err := renderPolicyData(p)
	if err != nil {
		return nil, err
	}
	out, err := Program()
	if err != nil {
		return nil, err
	}
	out[rulesFile], out[dnsmasqFile], out[policyFile] = rules, dnsmasq, data
	if p.Gateway {
		if out[gatewayFile], err = renderGateway(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}
