package firewall_test

import (
	"fmt"

	"github.com/agentbox-dev/agentbox/internal/testing/netlab"
)

// The lab's uids, addresses and the fake upstream's records; the diagram
// at the top of lab_test.go shows where each one lives.

// The agent's uid, as in the agent container (not firewall.DNSUID).
const agentUID = 1000

// Addresses of the lab.
const (
	sandboxV4 = "172.30.0.2"
	gatewayV4 = "172.30.0.1"
	sandboxV6 = "fd00:ab::2"
	gatewayV6 = "fd00:ab::1"

	upstream   = "198.18.0.53" // the egress container's resolver (resolv.conf)
	rogue      = "198.18.0.99" // another resolver, with its own answers
	rogueV6    = "2001:2::99"
	rogueV4Ans = "198.18.0.66" // what the rogue resolver answers for every name

	allowedV4  = "198.18.0.10" // allowed.test
	allowedV6  = "2001:2::10"
	wildV4     = "198.18.0.20" // wild.test and below
	v6Only     = "2001:2::60"  // v6.test
	unlistedV4 = "198.18.0.11" // what the upstream answers for any other name
	unlistedV6 = "2001:2::11"
	cidrHost   = "198.19.0.5"   // in the policy's CIDR 198.19.0.0/24 (port 8443)
	cidrHost2  = "198.19.0.200" // another one
	outsideV4  = "198.19.1.5"   // next to it, not listed
	privateV4  = "10.1.2.3"
	mixedV4    = "198.18.0.30" // mixed.private.test, with privateV4
	metadataV4 = "169.254.169.254"
	cgnatV4    = "100.64.0.1"
	ulaV6      = "fd00:1::1"

	// 10.99.0.5 embedded in IPv6 addresses: on a network with a translator
	// (NAT64) or relay (6to4), or a tunnel for IPv4-compatible addresses,
	// they reach the private IPv4 address. Here they are hosts of their
	// own, as reachable as any other.
	nat64V6  = "64:ff9b::a63:5"
	sixTo4V6 = "2002:a63:5::1"
	compatV6 = "::a63:5"
	// 198.18.0.21, a public address, through NAT64: allowed.
	publicNAT64V6 = "64:ff9b::c612:15"

	// An unlisted host that the agent tries to reach through an allowed
	// one with an IPv6 segment routing header, which the internet follows.
	routedV6 = "2001:2::70"

	// elevation.never of the lab (testdata/lab): a range of each family,
	// and a name, whose address lies outside them.
	neverV4      = "198.19.113.10"
	neverV6      = "2001:2:0:ff::10"
	neverNAT64   = "64:ff9b::c613:710a" // neverV4 in NAT64
	never6to4    = "2002:c613:710a::1"  // neverV4 in 6to4
	neverNamed   = "198.18.5.5"         // never.test
	besideNever  = "198.19.112.5"       // next to the never range
	neverNamedV6 = "2001:2::55"         // never.test over IPv6
	neverBelow   = "198.18.5.6"         // x.never.test, below the never name
	neverBelowV6 = "2001:2::56"

	dockerDNS = "127.0.0.11:5301" // where Docker's embedded DNS really listens

	poseTarget = "127.0.0.1:61000" // a source port of dnsmasq's queries
)

// rotating are the addresses the upstream gives rotate.test, one per lookup.
var rotating = []string{"198.18.1.1", "198.18.1.2", "198.18.1.3", "198.18.1.4", "198.18.1.5", "198.18.1.6", "198.18.1.7", "198.18.1.8"}

// bigAnswer is what the upstream gives big.wild.test: 100 addresses, an
// answer of about 1.6 kB, larger than a UDP answer may be (512 bytes, or
// dnsmasq's EDNS0 size, 1232): it resolves over TCP only.
var bigAnswer = func() []string {
	var out []string
	for i := 1; i <= 100; i++ {
		out = append(out, fmt.Sprintf("198.18.2.%d", i))
	}
	return out
}()

// egressCaps are the capabilities of the egress container
// (.agentbox/docker-compose.yml: cap_drop ALL, cap_add these).
var egressCaps = []string{"kill", "net_admin", "net_bind_service", "setgid", "setuid"}

// upstreamRecords are the fake upstream's answers. Every other name gets
// addresses that no allowed name has, so that a query that leaks past the
// filter shows.
var upstreamRecords = append(tableRecords(), []netlab.Record{
	{Name: "allowed.test", Type: "A", Values: []string{allowedV4}, TTL: 60},
	{Name: "allowed.test", Type: "AAAA", Values: []string{allowedV6}, TTL: 60},
	{Name: "allowed.test", Type: "TXT", Values: []string{"allowed.test text"}, TTL: 60},
	{Name: "nat64.wild.test", Type: "AAAA", Values: []string{publicNAT64V6}, TTL: 60}, // before wild.test, which matches it too
	{Name: "big.wild.test", Type: "A", Values: bigAnswer, TTL: 60},
	{Name: "wild.test", Type: "A", Values: []string{wildV4}, TTL: 60},
	{Name: "wild.test", Type: "AAAA", Values: []string{"2001:2::20"}, TTL: 60},
	{Name: "rotate.test", Type: "A", Values: rotating, Rotate: true, TTL: 0},
	{Name: "v6.test", Type: "AAAA", Values: []string{v6Only}, TTL: 60},
	{Name: "ten.private.test", Type: "A", Values: []string{privateV4}, TTL: 60},
	{Name: "meta.private.test", Type: "A", Values: []string{metadataV4}, TTL: 60},
	{Name: "lo.private.test", Type: "A", Values: []string{"127.0.0.2"}, TTL: 60},
	{Name: "cgnat.private.test", Type: "A", Values: []string{cgnatV4}, TTL: 60},
	{Name: "gw.private.test", Type: "A", Values: []string{gatewayV4}, TTL: 60},
	{Name: "ula.private.test", Type: "AAAA", Values: []string{ulaV6}, TTL: 60},
	{Name: "ll.private.test", Type: "AAAA", Values: []string{"fe80::1"}, TTL: 60},
	{Name: "mixed.private.test", Type: "A", Values: []string{mixedV4, privateV4}, TTL: 60},
	{Name: "nat64.private.test", Type: "AAAA", Values: []string{nat64V6}, TTL: 60},
	{Name: "6to4.private.test", Type: "AAAA", Values: []string{sixTo4V6}, TTL: 60},
	{Name: "compat.private.test", Type: "AAAA", Values: []string{compatV6}, TTL: 60},
	{Name: "x.never.test", Type: "A", Values: []string{neverBelow}, TTL: 60}, // before never.test, which matches it too
	{Name: "x.never.test", Type: "AAAA", Values: []string{neverBelowV6}, TTL: 60},
	{Name: "never.test", Type: "A", Values: []string{neverNamed}, TTL: 60},
	{Name: "never.test", Type: "AAAA", Values: []string{neverNamedV6}, TTL: 60},
	{Name: "cname.test", Type: "CNAME", Values: []string{"never.test"}, TTL: 60},
	{Name: "cdn.test", Type: "CNAME", Values: []string{"x.never.test"}, TTL: 60},
	{Name: "chain.test", Type: "CNAME", Values: []string{"hop.test"}, TTL: 60},
	{Name: "hop.test", Type: "CNAME", Values: []string{"x.never.test"}, TTL: 60},
	{Name: "bigalias.test", Type: "CNAME", Values: []string{"big.wild.test"}, TTL: 60},
	{Name: "dname.test", Type: "DNAME", Values: []string{"never.test"}, TTL: 60}, // x.dname.test: x.never.test
	{Name: "intonever.test", Type: "A", Values: []string{neverV4}, TTL: 60},
	{Name: "intonever.test", Type: "AAAA", Values: []string{neverV6}, TTL: 60},
	{Name: "nat64never.test", Type: "AAAA", Values: []string{neverNAT64}, TTL: 60},
	{Name: "6to4never.test", Type: "AAAA", Values: []string{never6to4}, TTL: 60},
	{Name: "*", Type: "A", Values: []string{unlistedV4}, TTL: 60},
	{Name: "*", Type: "AAAA", Values: []string{unlistedV6}, TTL: 60},
	{Name: "*", Type: "TXT", Values: []string{"upstream text"}, TTL: 60},
}...)
