// Package firewall compiles an egress policy into the static firewall program
// that runs in the egress container: an nftables ruleset, a dnsmasq
// configuration for the filter resolver, a ulogd2 configuration for the
// record of refused packets, and the entrypoint that loads and starts them.
// All four are rendered from the templates in templates/, fed by views that
// Go computes; every path, port and name the entrypoint shares with the
// others comes from the constants of this package.
package firewall
