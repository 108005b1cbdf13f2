package netlab

import (
	"fmt"
	"net/netip"
	"syscall"
)

// ipv6RTHDR is the socket option IPV6_RTHDR (linux/in6.h).
const ipv6RTHDR = 57

// routingHeader encodes r as the IPV6_RTHDR option expects it. The kernel
// fills in the address the socket connects to as the last one.
func routingHeader(r *Routing) ([]byte, error) {
	var hops [][16]byte
	for _, h := range r.Hops {
		ip, err := netip.ParseAddr(h)
		if err != nil || !ip.Is6() || ip.Is4In6() {
			return nil, fmt.Errorf("routing hop %q is not an IPv6 address", h)
		}
		hops = append(hops, ip.As16())
	}
	if len(hops) == 0 || len(hops) > 100 {
		return nil, fmt.Errorf("routing header with %d hops", len(hops))
	}
	switch r.Type {
	case 0:
		// Reserved word, then the hops in order (RFC 2460 section 4.4).
		b := []byte{0, byte(2 * len(hops)), 0, byte(len(hops)), 0, 0, 0, 0}
		for _, h := range hops {
			b = append(b, h[:]...)
		}
		return b, nil
	case 4:
		// Segment list in reverse: entry 0 is the last segment, the
		// destination, which the kernel writes (RFC 8754 section 2).
		n := len(hops) + 1
		b := []byte{0, byte(2 * n), 4, byte(n - 1), byte(n - 1), 0, 0, 0}
		b = append(b, make([]byte, 16)...)
		for i := len(hops) - 1; i >= 0; i-- {
			b = append(b, hops[i][:]...)
		}
		return b, nil
	}
	return nil, fmt.Errorf("routing header type %d (0 or 4)", r.Type)
}

// setRouting returns a dialer Control function that sets r on the socket.
func setRouting(r *Routing) (func(network, address string, c syscall.RawConn) error, error) {
	opt, err := routingHeader(r)
	if err != nil {
		return nil, err
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptString(int(fd), syscall.IPPROTO_IPV6, ipv6RTHDR, string(opt))
		})
		if err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("setsockopt IPV6_RTHDR type %d: %w", r.Type, serr)
		}
		return nil
	}, nil
}
