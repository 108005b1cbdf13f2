package firewall_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// The checks and requests of the bypass battery (lab_blocked_test.go).

// A check says why a response is not the one a blocked attempt must get.
type check func(l *lab, r netlab.Response) error

// refused: the attempt failed at once with errno.
func refused(errno string) check {
	return func(_ *lab, r netlab.Response) error {
		switch {
		case r.OK:
			return fmt.Errorf("it succeeded: %v", r)
		case r.Errno != errno:
			return fmt.Errorf("it failed with %q (%s), want %s", r.Errno, r.Err, errno)
		case r.Elapsed > fast:
			return fmt.Errorf("it failed after %v, want under %v", r.Elapsed, fast)
		}
		return nil
	}
}

// answer: the filter's answer, with exactly these values.
func answer(rcode string, values ...string) check {
	return func(_ *lab, r netlab.Response) error {
		if !r.OK || r.Rcode != rcode || !slices.Equal(r.Answers, values) {
			return fmt.Errorf("got %v, want %s %q", r, rcode, values)
		}
		return nil
	}
}

// rebind: the filter dropped an answer into a private range (dnsmasq's
// stop-dns-rebind answers NOERROR with no address) and logged it.
func rebind(name string) check {
	return func(l *lab, r netlab.Response) error {
		if err := answer("NOERROR")(l, r); err != nil {
			return err
		}
		if _, _, ok := l.egress.Log().Await(0, "possible DNS-rebind attack detected: "+name, 5*time.Second); !ok {
			return fmt.Errorf("dnsmasq logged no DNS-rebind attack for %s", name)
		}
		return nil
	}
}

// notPermitted: a command failed for lack of privilege.
func notPermitted(_ *lab, r netlab.Response) error {
	if r.OK || r.Exit <= 0 || !strings.Contains(r.Data, "Operation not permitted") {
		return fmt.Errorf("got %v, want a failure with \"Operation not permitted\"", r)
	}
	return nil
}

// noReply: the request went unanswered (the ICMPv6 echo socket reports
// no error when the firewall rejects a request).
func noReply(_ *lab, r netlab.Response) error {
	if r.OK || r.Errno != "timeout" {
		return fmt.Errorf("got %v, want no reply", r)
	}
	return nil
}

// notRouted: the attempt met want, and nothing reached routedV6.
func notRouted(want check) check {
	return func(l *lab, r netlab.Response) error {
		if n := l.routedPackets() - l.routed; n > 0 {
			return fmt.Errorf("it reached %s, which answered with %d packets; the attempt: %v", routedV6, n, r)
		}
		return want(l, r)
	}
}

// routed is a connection to routedV6 through allowedV6 with an IPv6 routing
// header of type typ.
func routed(typ int) netlab.Request {
	return netlab.Request{Op: "dial", Addr: addr(routedV6, 443), Routing: &netlab.Routing{Type: typ, Hops: []string{allowedV6}}, Timeout: 300 * time.Millisecond}
}

// attempt is one try of the bypass battery: reqs, each of which must meet
// want, after setup (whose results do not count).
type attempt struct {
	name  string
	setup []netlab.Request
	reqs  []netlab.Request
	want  check
}

// dnsReq is a lookup as a stub resolver makes it: a new socket for each try,
// and new tries after a timeout.
func dnsReq(server, network, name, typ string) netlab.Request {
	return netlab.Request{Op: "dns", Addr: server, Net: network, Name: name, Type: typ, Timeout: time.Second, Retries: 2}
}

// fromPort sends req from the agent's port, below the kernel's range of
// ephemeral ports, from which dnsmasq's queries to the upstream come.
func fromPort(req netlab.Request, port int) netlab.Request {
	req.Local = addr(sandboxV4, port)
	return req
}

func dial(host string, port int) netlab.Request {
	return netlab.Request{Op: "dial", Addr: addr(host, port)}
}

func command(argv ...string) netlab.Request { return netlab.Request{Op: "exec", Argv: argv} }
