package main

// Destinations of agentbox allow and revoke.

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
)

// maxGrantPorts is the most ports one grant may name (the egress's limit).
const maxGrantPorts = 16

// nameLike matches what is written as a domain name rather than an
// address: allow refuses those, as the egress grants addresses only.
var nameLike = regexp.MustCompile(`^[*A-Za-z0-9_.-]*[A-Za-z_][*A-Za-z0-9_.-]*$`)

// parseDest reads DEST: PREFIX, PREFIX:PORT[,PORT] or [IPv6PREFIX]:PORT,
// where PREFIX is an address or a CIDR; the port is 443 when none is
// written. A name is refused (exit 1), anything else malformed is a usage
// error.
func parseDest(s string) (netip.Prefix, []uint16, error) {
	host, ports, hasPorts := s, "", false
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 || (end+1 < len(s) && s[end+1] != ':') {
			return netip.Prefix{}, nil, badDest(s, "a [ without its ]:")
		}
		host = s[1:end]
		if end+1 < len(s) {
			ports, hasPorts = s[end+2:], true
		}
	case strings.Count(s, ":") == 1:
		host, ports, hasPorts = strings.Cut(s, ":")
	}
	p, err := parseHost(host)
	if err != nil {
		return p, nil, err
	}
	if !hasPorts {
		return p, []uint16{generator.HTTPSPort}, nil
	}
	list, err := parsePorts(ports)
	if err != nil {
		return p, nil, badDest(s, err.Error())
	}
	return p, list, nil
}

// parseHost reads an address or a CIDR.
func parseHost(s string) (netip.Prefix, error) {
	if nameLike.MatchString(s) {
		return netip.Prefix{}, &exitErr{exitError, fmt.Errorf("%+q is a name: only addresses and CIDRs (such as 203.0.113.5 or 198.18.7.0/24) can be granted so far", s)}
	}
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

// parsePorts reads PORT[,PORT]: sorted, without repeats.
func parsePorts(s string) ([]uint16, error) {
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
	if len(out) > maxGrantPorts {
		return nil, fmt.Errorf("%d ports: a grant names at most %d", len(out), maxGrantPorts)
	}
	return out, nil
}

func badDest(s, why string) error {
	return usageErrorf("invalid destination %+q: %s (want ADDRESS or CIDR, then optionally :PORT[,PORT]; an IPv6 one with a port as [2001:db8::/48]:443)", s, why)
}

// portArg writes ports as the egress reads them: 443,8443.
func portArg(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}
