package main

import (
	"errors"
	"net"
	"slices"
	"testing"
)

func TestComposeEnv(t *testing.T) {
	ipnet := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return n
	}
	addrs := func() ([]net.Addr, error) {
		return []net.Addr{ipnet("127.0.0.1/8"), ipnet("198.18.201.1/24"), ipnet("172.17.0.1/16"), ipnet("::1/128"),
			ipnet("fe80::1/64"), ipnet("2001:2::201/64"), &net.IPAddr{IP: net.ParseIP("198.18.9.9")}}, nil
	}
	got := composeEnv([]string{"PATH=/bin"}, addrs)
	if want := []string{"PATH=/bin", "AGENTBOX_HOST_ADDRS=198.18.201.1 172.17.0.1 2001:2::201"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// The caller's own value stays, even empty.
	if got := composeEnv([]string{"AGENTBOX_HOST_ADDRS="}, addrs); !slices.Equal(got, []string{"AGENTBOX_HOST_ADDRS="}) {
		t.Errorf("got %q", got)
	}
	if got := composeEnv(nil, func() ([]net.Addr, error) { return nil, errors.New("no") }); !slices.Equal(got, []string{"AGENTBOX_HOST_ADDRS="}) {
		t.Errorf("got %q", got)
	}
}
