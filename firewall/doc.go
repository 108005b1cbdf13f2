// Package firewall compiles an egress policy into the static firewall program
// that runs in the egress container: an nftables ruleset, a dnsmasq
// configuration for the filter resolver, and the entrypoint that loads both.
package firewall
