package firewall

import (
	"fmt"
	"slices"
	"strings"
)

// family is one address family of the inet table.
type family struct {
	suffix       string // set name suffix: "v4", "v6"
	typ          string // nftables set type
	match        string // nftables payload expression for the destination
	nftsetFamily string // the family in dnsmasq's nftset=: "4", "6"
}

// has reports whether c is of family f.
func (f family) has(c CIDR) bool { return c.Prefix.Addr().Is4() == (f.suffix == "v4") }

var (
	v4 = family{"v4", "ipv4_addr", "ip daddr", "4"}
	v6 = family{"v6", "ipv6_addr", "ip6 daddr", "6"}
)

// The table and the names of its chains and sets that the entrypoint uses
// too: it loads the upstream resolvers into the upstream sets, and flushes
// the output chain to close egress.
const (
	tableFamily = "inet"
	tableName   = "agentbox"
	table       = tableFamily + " " + tableName
	outputChain = "output"
	inputChain  = "input"
	upstreamV4  = "upstream_v4"
	upstreamV6  = "upstream_v6"
	// hostV4 and hostV6 hold the host's addresses and the default
	// gateways, which the entrypoint adds at start.
	hostV4 = "host_v4"
	hostV6 = "host_v6"
	// counterPrefix starts the name of every counter; the entrypoint
	// leaves it out when it prints them.
	counterPrefix = "rejected_"
	// grantMark is the conntrack mark of a connection a grant let through.
	grantMark = "0x00000001"
	// nameChain holds the accept rules of the granted names, which the
	// entrypoint writes at run time; nameMarkMask covers the ct marks of
	// their connections, (K << 8) for slot K.
	nameChain    = "name_grants"
	nameMarkMask = "0xffffff00"
	// neverNameV4 and neverNameV6 hold the addresses of the names of
	// elevation.never, which the grant resolver adds (nftset=).
	neverNameV4 = "never_name_v4"
	neverNameV6 = "never_name_v6"
)

// dnsZone is the conntrack zone of the flows between dnsmasq and the
// upstream resolvers.
const dnsZone = 1

// counters are the named counters of rejected packets, in the order the
// entrypoint prints them.
var counters = []counter{
	{counterPrefix + "dns", "DNS from other uids than dnsmasq not sent to the filter resolver"},
	{counterPrefix + "docker_dns", "other uids than dnsmasq to Docker's embedded DNS (127.0.0.11)"},
	{counterPrefix + "special", "private and special-purpose addresses not listed as CIDRs"},
	{counterPrefix + "other", "everything else not allowed"},
	{counterPrefix + "spoof", "other uids than dnsmasq posing as an upstream resolver: from its address, or from port 53"},
	{counterPrefix + "routing", "IPv6 packets with a routing header, whose destination is only the first hop"},
	{counterPrefix + "expired", "packets of a connection a grant let through, after the grant expired or was revoked"},
	{counterPrefix + "never", "addresses no grant may reach (elevation.never), not admitted by the policy"},
}

type counter struct{ Name, Comment string }

// modeFlags tell a template which mode it renders: neither is ModeAllowlist.
type modeFlags struct{ None, Open bool }

func flagsOf(m Mode) modeFlags { return modeFlags{None: m == ModeNone, Open: m == ModeOpen} }

// rulesView is what templates/rules.nft.tmpl sees.
type rulesView struct {
	modeFlags
	Header, EntrypointPath, DNSUser string
	CommonPath                      string
	ResolvConf, FilterAddr          string
	DNSUID, DNSMinPort, DNSMaxPort  int
	Zone                            int
	Table, OutputChain, InputChain  string
	UpstreamV4, UpstreamV6          string
	HostV4, HostV6, HostAddrsEnv    string
	GrantV4, GrantV6, GrantMark     string
	NameLive, NameChain, NameMask   string
	GrantDNSPorts                   string // a range: the grant resolver's and the never filter's
	CounterPrefix                   string
	Counters                        []counter
	NameGroups                      []nameGroup   // by port, increasing
	CIDRSets                        []intervalSet // by port, then family
	Special                         []intervalSet // v4, v6
	Never                           []intervalSet // v4, v6
	NeverNameV4, NeverNameV6        string        // the sets of the never names' addresses
	LogGroup, LogRate, LogBurst     int
	LogSnaplen                      int
	LogLimit, LogPrefix             string
	LogChains                       []logChain
	Gateway                         *gatewayRules // nil without the gateway
	PolicyChains                    []policyChain // rules.nft's
	// The gateway's names in common.nft, which has its chains in every mode.
	GatewayUID                            int
	GatewayUser, GatewayMap, GatewayNames string
}

// policyChain is one of the chains that common.nft's jump to: what the
// policy admits at that point of the output chain or of gateway_redirect.
type policyChain struct {
	Name    string
	Comment []string // its lines
	Rules   []string
}

// policyChains are the policy's rules, in the chains common.nft jumps to;
// every profile has each chain, empty or not.
func policyChains(v rulesView) []policyChain {
	dns := policyChain{Name: "policy_dns"}
	if v.None {
		dns.Comment = []string{
			"dnsmasq has no upstream: it answers on loopback and sends nothing",
			"else, not even to Docker's embedded DNS.",
		}
		dns.Rules = []string{
			fmt.Sprintf(`meta skuid %d oif != "lo" counter name "%sother" goto refuse_other`, v.DNSUID, v.CounterPrefix),
			fmt.Sprintf(`meta skuid %d ip daddr 127.0.0.11 counter name "%sother" goto refuse_other`, v.DNSUID, v.CounterPrefix),
		}
	}
	direct := policyChain{Name: "policy_direct"}
	names := policyChain{Name: "policy_names"}
	gateway := policyChain{Name: "gateway_policy"}
	var cidrs []string
	for _, c := range v.CIDRSets {
		cidrs = append(cidrs, fmt.Sprintf("%s @%s tcp dport %d accept", c.Match, c.Name, c.Port))
	}
	if gw := v.Gateway; gw != nil {
		direct.Rules = append(direct.Rules,
			fmt.Sprintf("ip daddr 127.0.0.1 tcp dport %s accept", gw.Listen),
			fmt.Sprintf("ip6 daddr ::1 tcp dport %s accept", gw.Listen))
		gateway.Rules = append(gateway.Rules, cidrs...)
	}
	direct.Rules = append(direct.Rules, cidrs...)
	if v.Open {
		names.Rules = append(names.Rules, "meta l4proto tcp accept")
	}
	for _, g := range v.NameGroups {
		for _, s := range g.Sets {
			match := fmt.Sprintf("%s @%s tcp dport %d", s.Match, s.Name, g.Port)
			if v.Gateway != nil {
				names.Rules = append(names.Rules, fmt.Sprintf("meta skuid %d %s accept", v.GatewayUID, match))
				gateway.Rules = append(gateway.Rules, fmt.Sprintf("%s redirect to : tcp dport map @%s", match, v.GatewayMap))
			} else {
				names.Rules = append(names.Rules, match+" accept")
			}
		}
	}
	if v.Gateway != nil {
		direct.Comment = []string{"The gateway's listeners, then the CIDRs."}
		names.Comment = []string{"The addresses of allowed names: the gateway's connections only."}
		gateway.Comment = []string{"The CIDRs stay address-based; the names' addresses go to the gateway."}
	}
	return []policyChain{dns, direct, names, gateway}
}

// gatewayRules is what rules.nft needs of a policy's gateway (its names,
// the same for every policy, are rulesView's Gateway* fields).
type gatewayRules struct {
	Listen string // the listeners' ports: a range
	Ports  []gatewayPort
}

// nftSet is a named set of addresses of one family.
type nftSet struct {
	Name  string // e.g. allow_v4_443
	Type  string // nftables type
	Match string // the payload expression that matches the set, e.g. "ip daddr"
}

// nameGroup is the names allowed on one port and their sets.
type nameGroup struct {
	Port  uint16
	Names []row    // aligned: the name, then its sources
	Sets  []nftSet // v4, v6
}

// intervalSet is a set of address ranges with one element a line.
type intervalSet struct {
	nftSet
	Port  uint16 // the TCP port of a CIDR set
	Merge bool   // auto-merge
	Elems []row  // aligned: the element and its comma, then its sources
}

// row is one line of an aligned list: Cell is padded to the width of its
// column when a Note follows it.
type row struct{ Cell, Note string }

// renderRules renders rules.nft for a normalized policy.
func renderRules(p Policy) ([]byte, error) {
	v, err := rulesViewOf(p)
	if err != nil {
		return nil, err
	}
	v.PolicyChains = policyChains(v)
	return execute("rules.nft.tmpl", v)
}

// renderCommon renders common.nft, which every rules.nft includes: what its
// template uses of rulesViewOf is the same for every policy.
func renderCommon() ([]byte, error) {
	v, err := rulesViewOf(Policy{})
	if err != nil {
		return nil, err
	}
	return execute("common.nft.tmpl", v)
}

// gatewayRulesOf is what rules.nft needs of policy p's gateway; nil
// without one.
func gatewayRulesOf(p Policy) (*gatewayRules, error) {
	if !p.Gateway {
		return nil, nil
	}
	ports, err := gatewayPorts(p)
	if err != nil {
		return nil, err
	}
	return &gatewayRules{Ports: ports,
		Listen: fmt.Sprintf("%d-%d", GatewayGrantListen, GatewayListenBase+max(len(ports), 1)-1)}, nil
}

// rulesViewOf is what rules.nft's and common.nft's templates see of policy p.
func rulesViewOf(p Policy) (rulesView, error) {
	r := newRuleset(p)
	gw, err := gatewayRulesOf(p)
	if err != nil {
		return rulesView{}, err
	}
	return rulesView{
		modeFlags:      flagsOf(p.Mode),
		Header:         Header,
		EntrypointPath: EntrypointPath,
		CommonPath:     CommonPath,
		DNSUser:        DNSUser,
		ResolvConf:     resolvConf,
		FilterAddr:     filterAddr,
		DNSUID:         DNSUID,
		DNSMinPort:     DNSMinPort,
		DNSMaxPort:     DNSMaxPort,
		Zone:           dnsZone,
		Table:          table,
		OutputChain:    outputChain,
		InputChain:     inputChain,
		UpstreamV4:     upstreamV4,
		UpstreamV6:     upstreamV6,
		HostV4:         hostV4,
		HostV6:         hostV6,
		HostAddrsEnv:   HostAddrsEnv,
		Counters:       counters,
		GrantV4:        GrantSetV4,
		GrantV6:        GrantSetV6,
		GrantMark:      grantMark,
		NameLive:       NameLiveSet,
		NameChain:      nameChain,
		NameMask:       nameMarkMask,
		GrantDNSPorts:  fmt.Sprintf("%d-%d", GrantDNSPort, NeverDNSPort),
		CounterPrefix:  counterPrefix,
		NameGroups:     r.nameGroups(),
		CIDRSets:       r.cidrSets(),
		Special:        specialSets(),
		Never:          neverSets(p.Never),
		NeverNameV4:    neverNameV4,
		NeverNameV6:    neverNameV6,
		LogGroup:       LogGroup,
		LogRate:        LogRate,
		LogBurst:       LogBurst,
		LogSnaplen:     logSnaplen,
		LogLimit:       logLimit,
		LogPrefix:      LogPrefix,
		LogChains:      logChains,
		Gateway:        gw,
		GatewayUID:     GatewayUID,
		GatewayUser:    GatewayUser,
		GatewayMap:     gatewayMap,
		GatewayNames:   gatewayNames,
	}, nil
}

// set returns the set of family f named name.
func (f family) set(name string) nftSet { return nftSet{name, f.typ, f.match} }

// ruleset is the policy grouped the way rules.nft uses it: by port.
type ruleset struct {
	domainsByPort map[uint16][]Domain
	cidrsByPort   map[uint16][]CIDR
	domainPorts   []uint16 // sorted
	cidrPorts     []uint16 // sorted
}

func newRuleset(p Policy) ruleset {
	r := ruleset{domainsByPort: map[uint16][]Domain{}, cidrsByPort: map[uint16][]CIDR{}}
	for _, d := range p.Domains {
		for _, port := range d.Ports {
			r.domainsByPort[port] = append(r.domainsByPort[port], d)
		}
	}
	for _, c := range p.CIDRs {
		for _, port := range c.Ports {
			r.cidrsByPort[port] = append(r.cidrsByPort[port], c)
		}
	}
	r.domainPorts = sortedKeys(r.domainsByPort)
	r.cidrPorts = sortedKeys(r.cidrsByPort)
	return r
}

// allowSet names the set of the addresses of the names allowed on port.
func allowSet(f family, port uint16) string { return fmt.Sprintf("allow_%s_%d", f.suffix, port) }

func (r ruleset) nameGroups() []nameGroup {
	var out []nameGroup
	for _, port := range r.domainPorts {
		var names, notes []string
		for _, d := range r.domainsByPort[port] {
			names = append(names, d.Name)
			notes = append(notes, strings.Join(d.Sources, ", "))
		}
		out = append(out, nameGroup{
			Port:  port,
			Names: align(names, notes),
			Sets:  []nftSet{v4.set(allowSet(v4, port)), v6.set(allowSet(v6, port))},
		})
	}
	return out
}

// cidrSets returns a set per port and family with CIDRs in it.
func (r ruleset) cidrSets() []intervalSet {
	var out []intervalSet
	for _, port := range r.cidrPorts {
		for _, f := range []family{v4, v6} {
			var elems, notes []string
			for _, c := range r.cidrsByPort[port] {
				if f.has(c) {
					elems = append(elems, c.Prefix.String()+",")
					notes = append(notes, strings.Join(c.Sources, ", "))
				}
			}
			if len(elems) == 0 {
				continue // no set for a family without CIDRs
			}
			out = append(out, intervalSet{
				nftSet: f.set(fmt.Sprintf("cidr_%s_%d", f.suffix, port)),
				Port:   port,
				Merge:  true,
				Elems:  align(elems, notes),
			})
		}
	}
	return out
}

// align pads each cell that has a note to the width of the widest cell.
func align(cells, notes []string) []row {
	width := 0
	for _, c := range cells {
		width = max(width, len(c))
	}
	rows := make([]row, len(cells))
	for i, c := range cells {
		rows[i] = row{c, notes[i]}
		if notes[i] != "" {
			rows[i].Cell = fmt.Sprintf("%-*s", width, c)
		}
	}
	return rows
}

// sortedKeys returns the ports of m in increasing order.
func sortedKeys[V any](m map[uint16]V) []uint16 {
	keys := make([]uint16, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
