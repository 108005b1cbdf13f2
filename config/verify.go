package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

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

// MemoryBytes returns the memory limit in bytes.
func (c *Config) MemoryBytes() int64 { return memoryBytes(c.Memory) }

// MemoryBytes returns the profile's memory limit in bytes.
func (p *Profile) MemoryBytes() int64 { return memoryBytes(p.Memory) }

func memoryBytes(m string) int64 {
	n, _ := strconv.ParseInt(m[:len(m)-1], 10, 64)
	return n << map[byte]int{'k': 10, 'm': 20, 'g': 30}[m[len(m)-1]]
}
