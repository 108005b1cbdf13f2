package firewall

import (
	"net/netip"
	"testing"
)

// TestSpecialEmbeddedIPv4 checks that IPv6 addresses embedding a special
// IPv4 address are special too, in each form, and that NAT64 of a public
// address is not.
func TestSpecialEmbeddedIPv4(t *testing.T) {
	special := func(a string) bool {
		ip := netip.MustParseAddr(a)
		for _, s := range specialV6 {
			if netip.MustParsePrefix(s.prefix).Contains(ip) {
				return true
			}
		}
		return false
	}
	for _, a := range []string{
		"64:ff9b::10.99.0.5", "64:ff9b::169.254.169.254", "64:ff9b::127.0.0.1", "64:ff9b::192.168.1.1", "64:ff9b::100.64.0.1",
		"2002:a63:5::1", "2002:a9fe:a9fe::", "2002:c0a8:101:1::1",
		"::10.99.0.5", "::8.8.8.8", "::", "::1",
	} {
		if !special(a) {
			t.Errorf("%s is not in the special IPv6 ranges", a)
		}
	}
	for _, a := range []string{"64:ff9b::198.18.0.21", "64:ff9b::8.8.8.8", "2002:c612:15::1", "2001:2::1"} {
		if special(a) {
			t.Errorf("%s is in the special IPv6 ranges", a)
		}
	}
}
