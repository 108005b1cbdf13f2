package firewall

import (
	"fmt"
	"strings"
)

// Run-time paths shared by dnsmasq.conf and entrypoint.sh.
const (
	runDir      = "/run/agentbox"
	pidFile     = runDir + "/dnsmasq.pid"
	serversFile = runDir + "/servers.conf"
)

// renderDnsmasq renders dnsmasq.conf for a normalized policy.
//
// Forwarding is not in this file. dnsmasq 2.90 forwards every name, listed or
// not, when address=/#/ is combined with server=/NAME/# and upstream servers
// that have no domain (--server=IP): the plain servers take precedence over
// address=/#/. Only server=/NAME/IP lines without any plain server give
// NXDOMAIN for the rest, and the upstream IP is known at start only. So the
// entrypoint writes those lines to a servers file, one per name below (taken
// from the nftset= lines) and upstream resolver.
func renderDnsmasq(p Policy) []byte {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	w("# %s", header)
	w("#")
	w("# dnsmasq configuration of the agentbox filter resolver. The firewall")
	w("# redirects every DNS query in the sandbox here. Names not listed below")
	w("# get NXDOMAIN. A listed name, and every name below it, is forwarded to the")
	w("# upstream resolvers, and the addresses in the answer are added to the")
	w("# firewall's allow sets for the name's TCP ports (nftset=).")
	w("#")
	w("# %s starts dnsmasq with", EntrypointPath)
	w("#   --servers-file=%s", serversFile)
	w("# which it writes at start: server=/NAME/UPSTREAM for each name below and")
	w("# each nameserver of /etc/resolv.conf. (server=/NAME/# with --server=UPSTREAM")
	w("# would forward every name: plain servers take precedence over address=/#/.)")
	w("")
	w("# Listen on loopback only; the firewall sends all DNS here.")
	w("listen-address=127.0.0.1")
	w("bind-interfaces")
	w("port=53")
	w("")
	w("# Run as a dedicated user (uid %d): the firewall lets only this uid reach", DNSUID)
	w("# the upstream resolvers. dnsmasq keeps CAP_NET_ADMIN for nftset=.")
	w("user=%s", DNSUser)
	w("group=%s", DNSUser)
	w("pid-file=%s", pidFile)
	w("")
	w("# Query the upstream resolvers from ports outside the kernel's ephemeral")
	w("# range, so that no lookup of the agent shares a port (and a conntrack")
	w("# entry) with a query of dnsmasq's.")
	w("min-port=%d", DNSMinPort)
	w("max-port=%d", DNSMaxPort)
	w("")
	w("# No other source of names or servers.")
	w("no-resolv")
	w("no-hosts")
	w("no-poll")
	w("")
	w("# Refuse answers that point into private ranges.")
	w("stop-dns-rebind")
	w("cache-size=1000")
	w("")
	w("# Audit log of every query and answer on stderr (docker compose logs egress).")
	w("log-queries")
	w("log-facility=-")
	w("")
	w("# Every name not listed below: NXDOMAIN.")
	w("address=/#/")
	for _, d := range p.Domains {
		w("")
		if len(d.Sources) > 0 {
			w("# %s: %s", d.Name, strings.Join(d.Sources, ", "))
		}
		sets := make([]string, 0, 2*len(d.Ports))
		for _, port := range d.Ports {
			sets = append(sets,
				fmt.Sprintf("4#inet#agentbox#allow_v4_%d", port),
				fmt.Sprintf("6#inet#agentbox#allow_v6_%d", port))
		}
		w("nftset=/%s/%s", d.Name, strings.Join(sets, ","))
	}
	return []byte(b.String())
}
