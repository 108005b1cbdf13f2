package firewall

import (
	"fmt"
	"strings"
)

// The gateway (docs/gateway.md): HAProxy in the egress container, as its
// own uid, takes every TCP connection the agent opens to a port of allowed
// names (the ruleset redirects it), admits it only when its TLS
// ClientHello's SNI or its HTTP Host is a name allowed on that port, and
// connects to an address of that name as the filter resolver answers.
const (
	GatewayUser = "agentbox-gw"
	GatewayUID  = 5354
	// GatewayConfigPath is HAProxy's configuration in the egress image.
	GatewayConfigPath = "/etc/agentbox/haproxy.cfg"
	// GatewayCommonPath is the egress program's part of HAProxy's
	// configuration, which it reads first.
	GatewayCommonPath = "/etc/agentbox/haproxy-common.cfg"
	// GatewaySocket is HAProxy's runtime API, root's only: the timed
	// name grants change its maps through it.
	GatewaySocket = "/run/agentbox/gateway.sock"
	// GatewayGrantsDir holds one map per port of allowed names,
	// grants_PORT.map: ".NAME END" lines, END a grant's end in Unix
	// seconds, and grants_any.map for the other ports (".NAME:PORT END").
	// The entrypoint creates them empty before HAProxy starts.
	GatewayGrantsDir = "/run/agentbox/gateway"
	// GatewayListenBase is the listener of the first port of allowed names
	// (in increasing order), on 127.0.0.1 and ::1; the next port's is one
	// above. Below 1024, where the agent cannot bind.
	GatewayListenBase = 600
	// GatewayGrantListen is the listener of the timed name grants on ports
	// without a listener of their own (agentbox allow NAME:PORT), on
	// 127.0.0.1 only: the gateway reads the port the agent dialled back
	// from the redirect, which Linux tells for IPv4 alone.
	GatewayGrantListen = GatewayListenBase - 1
	// GatewayListenMax is the most ports of allowed names: their
	// listeners stay below the forges' front doors (GatewayForgeListenBase),
	// which stay below the keys' (GatewayKeyListenBase).
	GatewayListenMax = GatewayForgeListenBase - GatewayListenBase
	// GatewayHelloSeconds is how long the gateway waits for a complete
	// ClientHello or HTTP request head.
	GatewayHelloSeconds = 5
)

// gatewayPid is where the entrypoint writes HAProxy's pid, for the
// healthcheck.
const gatewayPid = runDir + "/gateway.pid"

// gatewayForever is the end, in Unix seconds, of a timed grant made
// until revoked: the year 5138.
const gatewayForever = 99999999999

// gatewayMap is the ruleset's map from a port of allowed names to its
// listener.
const gatewayMap = "gateway_ports"

// gatewayV6Env is set in HAProxy's environment by the entrypoint when the
// loopback has ::1; haproxy.cfg binds the IPv6 listeners only then (a
// Docker network without IPv6 takes ::1 away, and a bind to it fails).
const gatewayV6Env = "AGENTBOX_GATEWAY_V6"

// gatewayGrantsAny is the grants map of GatewayGrantListen: ".NAME:PORT
// END" lines.
const gatewayGrantsAny = GatewayGrantsDir + "/grants_any.map"

// gatewayNames is the ruleset's nat chain that sends the agent's
// connections to the addresses of timed name grants to the gateway; the
// entrypoint writes it with the slots.
const gatewayNames = "gateway_names"

// gatewayView is what templates/haproxy.cfg.tmpl sees.
type gatewayView struct {
	Header, FilterAddr, Socket, LogPrefix string
	V6Env                                 string // set when the loopback has ::1
	UID, HelloSeconds, TimeoutMillis      int
	LogLen, NameMax, LogBurst, LogPeriod  int
	Why                                   gatewayWhys
	Ports                                 []gatewayPort
	Keys                                  []gatewayFront
	KeysMap, CAFile                       string
	KeysReadyPath, KeysDone               string
	KeyHeaders                            []string
	Forges                                []gatewayForge
	ForgeNames                            []string // ".host" of each forge
	GitLua, ForgeUser                     string
	CommonPath                            string // GatewayCommonPath
	// Any is the listener of the timed name grants on the other ports
	// (Port 0: the port the agent dialled).
	Any gatewayPort
}

// judgeView is what the template "judge" sees: the view and one port.
type judgeView struct {
	V gatewayView
	P gatewayPort
}

// Judge is the template "judge"'s view of port p.
func (v gatewayView) Judge(p gatewayPort) judgeView { return judgeView{v, p} }

// gatewayPort is one port of allowed names and its listener.
type gatewayPort struct {
	Port, Listen int
	Grants       string // the grants map's path
	Names        []row  // ".name" patterns, then their sources
}

// gatewayPorts returns the ports of allowed names with their listeners.
func gatewayPorts(p Policy) ([]gatewayPort, error) {
	r := newRuleset(p)
	if len(r.domainPorts) > GatewayListenMax {
		return nil, fmt.Errorf("the gateway listens for at most %d ports of allowed names, not %d", GatewayListenMax, len(r.domainPorts))
	}
	var out []gatewayPort
	for i, port := range r.domainPorts {
		g := gatewayPort{Port: int(port), Listen: GatewayListenBase + i,
			Grants: fmt.Sprintf("%s/grants_%d.map", GatewayGrantsDir, port)}
		var names, notes []string
		for _, d := range r.domainsByPort[port] {
			names = append(names, "."+d.Name)
			notes = append(notes, strings.Join(d.Sources, ", "))
		}
		g.Names = align(names, notes)
		out = append(out, g)
	}
	return out, nil
}

// renderGatewayCommon renders haproxy-common.cfg, the same for every
// policy.
func renderGatewayCommon() ([]byte, error) {
	return execute("haproxy-common.cfg.tmpl", gatewayViewOf(Policy{}, nil))
}

// renderGateway renders haproxy.cfg for a normalized policy.
func renderGateway(p Policy) ([]byte, error) {
	ports, err := gatewayPorts(p)
	if err != nil {
		return nil, err
	}
	return execute("haproxy.cfg.tmpl", gatewayViewOf(p, ports))
}

// gatewayViewOf is what the gateway's templates see of policy p, whose
// ports are ports.
func gatewayViewOf(p Policy, ports []gatewayPort) gatewayView {
	return gatewayView{
		Header:       Header,
		FilterAddr:   filterAddr,
		Socket:       GatewaySocket,
		V6Env:        gatewayV6Env,
		UID:          GatewayUID,
		HelloSeconds: GatewayHelloSeconds,
		// The inspect delay has passed (its timer fires at the delay; the
		// clock reads whole milliseconds).
		TimeoutMillis: GatewayHelloSeconds*1000 - 10,
		LogPrefix:     GatewayLogPrefix,
		LogLen:        gatewayLogLen,
		NameMax:       GatewayLogNameMax,
		LogBurst:      GatewayLogBurst,
		LogPeriod:     GatewayLogPeriod,
		Why:           gatewayWhy,
		Ports:         ports,
		Keys:          gatewayKeys(p),
		KeysMap:       GatewayKeysMap,
		CAFile:        GatewayCAFile,
		KeyHeaders:    KeyHeaders,
		KeysReadyPath: KeysReadyPath,
		KeysDone:      keysDone,
		Forges:        gatewayForges(p),
		ForgeNames:    forgeNames(p),
		GitLua:        GatewayGitLua,
		ForgeUser:     forgeUser,
		CommonPath:    GatewayCommonPath,
		Any:           gatewayPort{Listen: GatewayGrantListen, Grants: gatewayGrantsAny},
	}
}

// GatewayPortsOf returns the ports that the gateway of policy p listens on
// (those of its allowed names); none without a gateway.
func GatewayPortsOf(p Policy) ([]uint16, error) {
	p, err := normalize(p)
	if err != nil || !p.HasGateway() {
		return nil, err
	}
	ports, err := gatewayPorts(p)
	if err != nil {
		return nil, err
	}
	out := make([]uint16, len(ports))
	for i, g := range ports {
		out[i] = uint16(g.Port)
	}
	return out, nil
}
