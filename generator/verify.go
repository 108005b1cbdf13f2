package generator

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
)

// The default targets of verify's network probes, for real use: names
// reserved for documentation (RFC 2606), a public resolver's addresses and
// the cloud metadata service. agentbox verify --help lists them, and
// blocked --suggest never proposes them.
var DefaultUnlistedNames = []string{"example.com", "example.net", "example.org"}

const (
	DefaultUnlistedAddress = "1.1.1.1:443"
	DefaultResolver        = "1.1.1.1"
	DefaultIPv6Address     = "[2606:4700:4700::1111]:443"
	DefaultMetadataAddress = "169.254.169.254:80"
)

// Verify holds the targets of `agentbox verify`'s network probes.
type Verify struct {
	Allowed         string // host:port, or "" when the policy lists no name
	UnlistedName    string
	UnlistedAddress string // IPv4 address:port
	Resolver        string // IPv4 address
	IPv6Address     string // [address]:port
	MetadataAddress string // IPv4 address:port
}

// verifyTargets validates the verify section and applies its defaults.
func (c *checker) verifyTargets(w wireVerify, cfg *Config) {
	v := &cfg.Verify
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	if a := str(w.Allowed); a != "" {
		host, port, err := net.SplitHostPort(a)
		if p, perr := strconv.ParseUint(port, 10, 16); err == nil && (perr != nil || p == 0) {
			err = fmt.Errorf("invalid port %q", port)
		}
		if _, ipErr := netip.ParseAddr(host); err == nil && ipErr != nil {
			_, _, err = validate.Domain(host)
		}
		if err != nil {
			c.fail("verify.allowed", fmt.Errorf("invalid host:port %q: %v", a, err))
		}
		v.Allowed = a
	}
	if n := str(w.UnlistedName); n != "" {
		if _, _, err := validate.Domain(n); err != nil || strings.HasPrefix(n, "*.") {
			c.failf("verify.unlisted_name", "invalid name %q", n)
		}
		v.UnlistedName = n
	}
	v.UnlistedAddress = c.addrPort("verify.unlisted_address", str(w.UnlistedAddress))
	v.MetadataAddress = c.addrPort("verify.metadata_address", str(w.MetadataAddress))
	if r := str(w.Resolver); r != "" {
		if a, err := netip.ParseAddr(r); err != nil || !a.Is4() {
			c.failf("verify.resolver", "invalid IPv4 address %q", r)
		}
		v.Resolver = r
	}
	if a := str(w.IPv6Address); a != "" {
		if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().Is6() || ap.Addr().Zone() != "" || ap.Port() == 0 {
			c.failf("verify.ipv6_address", "invalid [IPv6 address]:port %q", a)
		}
		v.IPv6Address = a
	}
}

// addrPort checks an optional IPv4 address:port.
func (c *checker) addrPort(path, a string) string {
	if a == "" {
		return ""
	}
	if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().Is4() || ap.Port() == 0 {
		c.failf(path, "invalid IPv4 address:port %q", a)
	}
	return a
}

// VerifyTargets returns the probe targets of cfg's balanced profile,
// defaults applied.
func VerifyTargets(cfg *Config) Verify {
	p, ok := cfg.Profile(ProfileBalanced)
	if !ok { // a Config made by hand, without its profiles
		b := builtin(cfg, ProfileBalanced)
		p = &b
	}
	return ProfileVerifyTargets(cfg, p)
}

// ProfileVerifyTargets returns the probe targets of profile p, defaults
// applied. Under mode none, the name that must not resolve is one the
// balanced policy allows, and nothing must connect; under open, only a
// verify.allowed that agentbox.yaml names.
func ProfileVerifyTargets(cfg *Config, p *Profile) Verify {
	v := cfg.Verify
	pol := profilePolicy(cfg, p)
	switch p.Mode {
	case firewall.ModeNone:
		// The name balanced connects to must not even resolve.
		if host, _, err := net.SplitHostPort(VerifyTargets(cfg).Allowed); err == nil && net.ParseIP(host) == nil {
			v.UnlistedName = host
		}
		v.Allowed = ""
	case firewall.ModeAllowlist:
		if v.Allowed == "" && len(pol.Domains) > 0 {
			d := pol.Domains[0]
			v.Allowed = d.Name + ":" + strconv.Itoa(int(d.Ports[0]))
		}
	}
	if v.UnlistedName == "" {
		for _, n := range DefaultUnlistedNames {
			if !slices.ContainsFunc(pol.Domains, func(d firewall.Domain) bool { return n == d.Name || strings.HasSuffix(n, "."+d.Name) }) {
				v.UnlistedName = n
				break
			}
		}
	}
	if v.UnlistedAddress == "" {
		v.UnlistedAddress = DefaultUnlistedAddress
	}
	if v.Resolver == "" {
		v.Resolver = DefaultResolver
	}
	if v.MetadataAddress == "" {
		v.MetadataAddress = DefaultMetadataAddress
	}
	if v.IPv6Address == "" {
		v.IPv6Address = DefaultIPv6Address
	}
	return v
}

// MemoryBytes returns the memory limit in bytes.
func (c *Config) MemoryBytes() int64 { return memoryBytes(c.Memory) }

// MemoryBytes returns the profile's memory limit in bytes.
func (p *Profile) MemoryBytes() int64 { return memoryBytes(p.Memory) }

func memoryBytes(m string) int64 {
	n, _ := strconv.ParseInt(m[:len(m)-1], 10, 64)
	return n << map[byte]int{'k': 10, 'm': 20, 'g': 30}[m[len(m)-1]]
}
