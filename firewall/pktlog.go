package firewall

// The record of refused packets. Every reject path of rules.nft logs the
// packet to netlink group LogGroup (nftables "log group": NFLOG, not the
// kernel's text log) with the prefix LogPrefix + a key of LogReasons, under
// one token bucket for all of them: at most LogRate packets a second after
// a burst of LogBurst, whatever floods. The limit gates the log statement
// only; the rule after it refuses every packet. ulogd2 (Debian's ulogd2
// and ulogd2-json) reads the group and writes one JSON line per packet to
// the egress container's stdout, where agentbox blocked reads it with
// dnsmasq's log.
const (
	UlogdPath = "/etc/agentbox/ulogd.conf"
	// LogUser is the user ulogd2 runs as once it has bound the group: the
	// Debian package's own, which nothing else uses.
	LogUser   = "ulog"
	LogGroup  = 1
	LogPrefix = "agentbox-refused:"
	// LogRate packets a second, after LogBurst at once. ulogd2's record
	// of a TCP packet is about 850 bytes: at most about 270 KB a minute.
	LogRate  = 5
	LogBurst = 50
	// logSnaplen bytes of each packet reach ulogd2: the IP and transport
	// headers, not the payload (ulogd2's JSON has none of it anyway).
	logSnaplen = 128
	// logLimit is the limit object of rules.nft that every log shares.
	logLimit = "refused_log"
)

// The keys of LogReasons that cmd/agentbox treats apart.
const (
	// ReasonUnlisted is TCP to a public address and port the policy does
	// not list: the one reason a network.cidrs entry could change.
	ReasonUnlisted = "unlisted"
	// ReasonSpecial is a private or special-purpose range: refused unless
	// network.cidrs lists it, and then on its ports only.
	ReasonSpecial = "special"
)

// LogReasons are the keys of the log prefixes and what each means.
var LogReasons = map[string]string{
	"dns":          "DNS not through the filter resolver (over IPv6, from its ports, or to the upstream)",
	"docker_dns":   "to Docker's embedded DNS",
	"spoof":        "posing as an upstream resolver (from its address or port 53)",
	"routing":      "IPv6 routing header",
	"expired":      "connection of an expired or revoked grant",
	"never":        "an address no grant may reach (elevation.never)",
	ReasonSpecial:  "private or special-purpose address",
	ReasonUnlisted: "TCP to an unlisted address or port",
	"udp":          "UDP (only TCP is allowed)",
	"icmp":         "ICMP",
	"other":        "another protocol",
}

// logChain is a chain of rules.nft that logs a refused packet and then
// refuses (or drops) it.
type logChain struct {
	Name    string
	Logs    []logRule
	Verdict string
}

// logRule logs the packets that Match (every one if empty) with Reason.
type logRule struct{ Match, Reason string }

// logChains are the log chains, one per counter of a reject path.
var logChains = []logChain{
	{"refuse_dns", []logRule{{"", "dns"}}, "goto refuse"},
	{"refuse_docker_dns", []logRule{{"", "docker_dns"}}, "goto refuse"},
	{"refuse_spoof", []logRule{{"", "spoof"}}, "goto refuse"},
	{"drop_routing", []logRule{{"", "routing"}}, "drop"},
	{"refuse_expired", []logRule{{"", "expired"}}, "goto refuse"},
	{"refuse_never", []logRule{{"", "never"}}, "goto refuse"},
	{"refuse_special", []logRule{{"", "special"}}, "goto refuse"},
	{"refuse_other", []logRule{
		{"meta l4proto tcp", ReasonUnlisted},
		{"meta l4proto udp", "udp"},
		{"meta l4proto { icmp, icmpv6 }", "icmp"},
		{"meta l4proto != { tcp, udp, icmp, icmpv6 }", "other"},
	}, "goto refuse"},
}

// ulogdView is what templates/ulogd.conf.tmpl sees.
type ulogdView struct {
	Header, EntrypointPath, UlogdPath, LogUser, LogPrefix string
	LogGroup, LogRate, LogBurst                           int
}

// renderUlogd renders ulogd.conf; it depends on no policy.
func renderUlogd() ([]byte, error) {
	return execute("ulogd.conf.tmpl", ulogdView{
		Header:         Header,
		EntrypointPath: EntrypointPath,
		UlogdPath:      UlogdPath,
		LogUser:        LogUser,
		LogPrefix:      LogPrefix,
		LogGroup:       LogGroup,
		LogRate:        LogRate,
		LogBurst:       LogBurst,
	})
}
