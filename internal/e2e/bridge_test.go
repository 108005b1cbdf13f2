//go:build e2e

package e2e

import (
	"net"
	"testing"
)

// A daemon that has just created docker0 reports no IPAM gateway; the
// address must come from the interface.
func TestPickBridgeAddress(t *testing.T) {
	v4 := &net.IPNet{IP: net.ParseIP("172.17.0.1").To4(), Mask: net.CIDRMask(16, 32)}
	v6 := &net.IPNet{IP: net.ParseIP("fe80::1"), Mask: net.CIDRMask(64, 128)}
	for _, c := range []struct {
		name  string
		addrs []net.Addr
		gw    string
		want  string
	}{
		{"fresh daemon: no gateway", []net.Addr{v6, v4}, "", "172.17.0.1"},
		{"interface wins", []net.Addr{v4}, "10.0.0.1", "172.17.0.1"},
		{"no interface: gateway", nil, "172.18.0.1", "172.18.0.1"},
		{"nothing", []net.Addr{v6}, "", ""},
	} {
		got, err := pickBridgeAddress(c.addrs, c.gw)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
