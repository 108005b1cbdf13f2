package egress

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
)

// MaxPorts is the most ports one grant may name (the egress's limit).
const MaxPorts = 16

// nameLike matches what is written as a domain name rather than an
// address: a letter or an underscore, and no ':' or '/'.
var nameLike = regexp.MustCompile(`^[*A-Za-z0-9_.-]*[A-Za-z_][*A-Za-z0-9_.-]*$`)

// Dest is a destination of a grant or a revoke: an address range, or a
// name (with the names below it), and TCP ports.
type Dest struct {
	Prefix netip.Prefix // when Name is ""
	Name   string       // lower case, without "*." or a trailing dot
	Ports  []uint16
}

// String is the destination as the egress and the audit log write it.
func (d Dest) String() string {
	if d.Name != "" {
		return d.Name
	}
	return d.Prefix.String()
}

// command is the egress's command for verb (grant, revoke) on d: the
// "-name" one for a name.
func (d Dest) command(verb string) string {
	if d.Name != "" {
		return verb + "-name"
	}
	return verb
}

// PolicyDest is e with ports as a destination.
func PolicyDest(e config.PolicyEntry, ports []uint16) Dest {
	return Dest{Prefix: e.Prefix, Name: e.Name, Ports: ports}
}

// ParseDest reads DEST: HOST, HOST:PORT[,PORT] or [IPv6PREFIX]:PORT, where
// HOST is an address, a CIDR or a domain name (example.com or
// *.example.com, both the name and the names below it); the port is 443
// when none is written.
func ParseDest(s string) (Dest, error) {
	host, ports, hasPorts := s, "", false
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 || (end+1 < len(s) && s[end+1] != ':') {
			return Dest{}, badDest(s, "a [ without its ]:")
		}
		host = s[1:end]
		if end+1 < len(s) {
			ports, hasPorts = s[end+2:], true
		}
	case strings.Count(s, ":") == 1:
		host, ports, hasPorts = strings.Cut(s, ":")
	}
	var d Dest
	var err error
	if nameLike.MatchString(host) && !strings.HasPrefix(s, "[") {
		d.Name, err = config.GrantName(host)
		if err != nil {
			return d, badDest(s, err.Error())
		}
	} else if d.Prefix, err = parseHost(host); err != nil {
		return d, err
	}
	d.Ports = []uint16{config.HTTPSPort}
	if hasPorts {
		if d.Ports, err = ParsePorts(ports); err != nil {
			return d, badDest(s, err.Error())
		}
	}
	return d, nil
}

// parseHost reads an address or a CIDR.
func parseHost(s string) (netip.Prefix, error) {
	var p netip.Prefix
	var err error
	if strings.Contains(s, "/") {
		p, err = netip.ParsePrefix(s)
	} else if a, aerr := netip.ParseAddr(s); aerr == nil && a.Zone() == "" {
		p = netip.PrefixFrom(a, a.BitLen())
	} else {
		err = aerr
	}
	switch {
	case err != nil || !p.IsValid():
		return p, badDest(s, "not an address or CIDR")
	case p.Addr().Is4In6():
		return p, badDest(s, "write IPv4-mapped addresses as IPv4")
	case p.Masked() != p:
		return p, badDest(s, fmt.Sprintf("host bits are set; did you mean %s?", p.Masked()))
	}
	return p, nil
}

// ParsePorts reads PORT[,PORT]: sorted, without repeats.
func ParsePorts(s string) ([]uint16, error) {
	var out []uint16
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("invalid port %+q", f)
		}
		if n < 1 || n > 65535 {
			return nil, fmt.Errorf("invalid port %d: must be 1-65535", n)
		}
		out = append(out, uint16(n))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxPorts {
		return nil, fmt.Errorf("%d ports: a grant names at most %d", len(out), MaxPorts)
	}
	return out, nil
}

func badDest(s, why string) error {
	return fmt.Errorf("invalid destination %+q: %s (want ADDRESS, CIDR or NAME, then optionally :PORT[,PORT]; an IPv6 one with a port as [2001:2::/48]:443)", s, why)
}

// PortArg writes ports as the egress reads them: 443,8443.
func PortArg(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}
