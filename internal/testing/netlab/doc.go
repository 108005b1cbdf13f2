// Package netlab builds small network labs for tests: network namespaces
// joined by veth pairs, with no link to the machine's own namespace, and
// helper processes that run inside them.
//
// A helper is the test binary itself, started again in a namespace (as root
// or as an unprivileged uid) with -test.run naming a test that calls
// HelperMain. It serves the lab's fake internet (DNS, TCP, HTTP, UDP echo)
// or makes the attempts a test asks for (DNS queries, connections, UDP,
// ICMP, raw sockets, commands) and reports what happened, errno included.
// The test talks to it in JSON lines over its stdin and stdout.
//
// Everything needs root, ip (iproute2), unshare, nsenter and setpriv
// (util-linux); the caller checks for them (internal/testenv). A Lab removes
// its namespaces and kills every process in them when the test ends, and
// removes what crashed runs of earlier test processes left behind.
package netlab
