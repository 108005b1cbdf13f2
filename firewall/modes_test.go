package firewall

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The rules of the output chain that every mode shares, in order: the DNS
// rules before them differ, and so do the accepts after "oif lo".
var (
	// Other uids' DNS, only to the filter resolver.
	dnsRules = []string{
		`meta skuid != { 0, 5353 } meta l4proto { tcp, udp } th dport 53 th sport 61000-65535 counter name "rejected_dns" goto refuse_dns`,
		`meta skuid != { 0, 5353 } meta l4proto { tcp, udp } th dport 53 ip daddr != 127.0.0.1 counter name "rejected_dns" goto refuse_dns`,
		`meta skuid != { 0, 5353 } meta l4proto { tcp, udp } th dport 53 meta nfproto ipv6 counter name "rejected_dns" goto refuse_dns`,
	}
	// From "ct mark" to the filter resolver.
	middleRules = []string{
		"meta skuid 0 meta l4proto { tcp, udp } th dport 53 accept",
		`exthdr rt exists counter name "rejected_routing" goto drop_routing`,
		`tcp flags & rst == 0 ct mark & 0x00000001 == 0x00000001 ip daddr . tcp dport != @grant_v4 counter name "rejected_expired" goto refuse_expired`,
		`tcp flags & rst == 0 ct mark & 0x00000001 == 0x00000001 ip6 daddr . tcp dport != @grant_v6 counter name "rejected_expired" goto refuse_expired`,
		`tcp flags & rst == 0 ct mark & 0xffffff00 != 0 ct mark . tcp dport != @name_live counter name "rejected_expired" goto refuse_expired`,
		"ct state established,related accept",
		"ct state invalid drop",
		"icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } ip6 hoplimit 255 accept",
		"icmpv6 type { mld-listener-report, mld2-listener-report } ip6 hoplimit 1 accept",
		"ip daddr 127.0.0.1 udp dport 53 accept",
		"ip daddr 127.0.0.1 tcp dport 53 accept",
	}
	specialRules = []string{
		`ip daddr @host_v4 counter name "rejected_special" goto refuse_special`,
		`ip6 daddr @host_v6 counter name "rejected_special" goto refuse_special`,
		`ip daddr @special_v4 counter name "rejected_special" goto refuse_special`,
		`ip6 daddr @special_v6 counter name "rejected_special" goto refuse_special`,
	}
	grantRules = []string{
		`ip daddr @never_v4 counter name "rejected_never" goto refuse_never`,
		`ip6 daddr @never_v6 counter name "rejected_never" goto refuse_never`,
		`ip daddr @never_name_v4 counter name "rejected_never" goto refuse_never`,
		`ip6 daddr @never_name_v6 counter name "rejected_never" goto refuse_never`,
		"ip daddr . tcp dport @grant_v4 ct mark set ct mark | 0x00000001 accept",
		"ip6 daddr . tcp dport @grant_v6 ct mark set ct mark | 0x00000001 accept",
		"jump name_grants",
	}
	upstreamAccepts = []string{
		"meta skuid 5353 ip daddr @upstream_v4 meta l4proto { tcp, udp } accept",
		"meta skuid 5353 ip6 daddr @upstream_v6 meta l4proto { tcp, udp } accept",
	}
	spoofRules = []string{
		`meta skuid != { 0, 5353 } ip saddr 127.0.0.11 counter name "rejected_spoof" goto refuse_spoof`,
		`meta skuid != { 0, 5353 } meta l4proto { tcp, udp } th sport 53 counter name "rejected_spoof" goto refuse_spoof`,
	}
	upstreamSpoof = []string{
		`meta skuid != { 0, 5353 } ip saddr @upstream_v4 counter name "rejected_spoof" goto refuse_spoof`,
		`meta skuid != { 0, 5353 } ip6 saddr @upstream_v6 counter name "rejected_spoof" goto refuse_spoof`,
	}
	dockerDNSRule = `meta skuid != { 0, 5353 } ip daddr 127.0.0.11 counter name "rejected_docker_dns" goto refuse_docker_dns`
	grantDNSRule  = `meta skuid != { 0, 5353 } ip daddr 127.0.0.1 meta l4proto { tcp, udp } th dport 54-56 counter name "rejected_dns" goto refuse_dns comment "the grant resolver and the never filter answer dnsmasq only"`
	upstreamDNS   = []string{
		`meta skuid != { 0, 5353 } ip daddr @upstream_v4 counter name "rejected_dns" goto refuse_dns`,
		`meta skuid != { 0, 5353 } ip6 daddr @upstream_v6 counter name "rejected_dns" goto refuse_dns`,
	}
	refuseRule = `counter name "rejected_other" goto refuse_other`
)

// noneOutput and openOutput are the output chains of the none and open
// policies (firewall_test.go), in order.
var (
	// Mode none has the upstream sets' rules too (common.nft's), but
	// the sets stay empty: the entrypoint adds no upstream in this mode.
	noneOutput = slices.Concat(dnsRules, upstreamDNS, []string{
		dockerDNSRule,
		`meta skuid 5353 oif != "lo" counter name "rejected_other" goto refuse_other`,
		`meta skuid 5353 ip daddr 127.0.0.11 counter name "rejected_other" goto refuse_other`,
		grantDNSRule,
	}, upstreamSpoof, spoofRules, middleRules, upstreamAccepts, []string{`oif "lo" accept`}, specialRules, grantRules, []string{refuseRule})
	openOutput = slices.Concat(dnsRules, upstreamDNS, []string{dockerDNSRule, grantDNSRule}, upstreamSpoof, spoofRules, middleRules,
		upstreamAccepts, []string{
			`oif "lo" accept`,
			"ip daddr @cidr_v4_5432 tcp dport 5432 accept",
			"ip6 daddr @cidr_v6_5432 tcp dport 5432 accept",
		}, specialRules, []string{"meta l4proto tcp accept"}, grantRules, []string{refuseRule})
)

// includedSets are the sets of common.nft, which every rules.nft includes
// first, in order.
var includedSets = []string{"host_v4", "host_v6", "special_v4", "special_v6", "never_name_v4", "never_name_v6", "grant_v4", "grant_v6", "name_live",
	"upstream_v4", "upstream_v6", "never_v4", "never_v6"}

func TestRenderModeRules(t *testing.T) {
	for _, tc := range []struct {
		policy   string
		sets     []string
		output   []string
		chains   []string // chains that must be there
		noChains []string
		header   string
	}{
		{
			policy: "none",
			sets:   includedSets,
			output: noneOutput,
			chains: []string{"dns_redirect", "refuse", "input", "zone_out", "zone_in"},
			header: "# Mode none: no network but loopback;",
		},
		{
			policy: "open",
			sets:   append(slices.Clone(includedSets), "cidr_v4_5432", "cidr_v6_5432"),
			output: openOutput,
			chains: []string{"dns_redirect", "refuse", "input", "zone_out", "zone_in"},
			header: "# Mode open: TCP to every public address, on every port;",
		},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			rules := wholeRules(t, mustRender(t, policies[tc.policy]))
			if got := setNames(rules); !slices.Equal(got, tc.sets) {
				t.Errorf("sets:\n got %q\nwant %q", got, tc.sets)
			}
			if got := chainRules(rules, "output"); !slices.Equal(got, tc.output) {
				t.Errorf("output chain:\n got %q\nwant %q", got, tc.output)
			}
			for _, c := range tc.chains {
				if chainRules(rules, c) == nil {
					t.Errorf("no chain %s", c)
				}
			}
			for _, c := range tc.noChains {
				if chainRules(rules, c) != nil {
					t.Errorf("chain %s is there", c)
				}
			}
			if !strings.Contains(rules, "\n"+tc.header) {
				t.Errorf("rules.nft lacks the header %q", tc.header)
			}
			// The redirect and the input chain are those of allowlist mode.
			allowlist := wholeRules(t, mustRender(t, policies["rich"]))
			for _, c := range []string{"dns_redirect", "refuse", "input"} {
				if got, want := chainRules(rules, c), chainRules(allowlist, c); !slices.Equal(got, want) {
					t.Errorf("chain %s:\n got %q\nwant %q", c, got, want)
				}
			}
		})
	}
}

func TestRenderModeNoneNamesNoUpstream(t *testing.T) {
	files := mustRender(t, policies["none"])
	if rules := string(files[rulesFile]); strings.Contains(rules, "upstream_v") {
		t.Errorf("rules.nft of mode none has upstream sets:\n%s", rules)
	}
	conf := wholeDnsmasq(t, files)
	for _, want := range []string{"\naddress=/#/\n", "\nlog-queries\n", "\nno-resolv\n", "\nlisten-address=127.0.0.1\n", "# Mode none (the locked profile): no upstream resolver."} {
		if !strings.Contains(conf, want) {
			t.Errorf("dnsmasq.conf lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`(?m)^(server|nftset|local|address=/[^#]).*`).FindString(conf); m != "" {
		t.Errorf("dnsmasq.conf of mode none has %q", m)
	}
	// The entrypoint writes no server, even with upstream resolvers.
	out := sourceEntrypointOf(t, policies["none"], `upstreams=(192.0.2.53) gdns_port="" granted_n=(); servers_conf`)
	if strings.Contains(out, "server=") || !strings.Contains(out, "no upstream resolver") {
		t.Errorf("the servers file of mode none:\n%s", out)
	}
}

func TestRenderModeOpenForwardsEveryName(t *testing.T) {
	files := mustRender(t, policies["open"])
	conf := wholeDnsmasq(t, files)
	for _, want := range []string{"\naddress=/invalid/\n", "\nstop-dns-rebind\n", "\nlog-queries\n", "\nno-resolv\n", "# Mode open (the open profile): every name is forwarded"} {
		if !strings.Contains(conf, want) {
			t.Errorf("dnsmasq.conf lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`(?m)^(server|nftset|address=/#/).*`).FindString(conf); m != "" {
		t.Errorf("dnsmasq.conf of mode open has %q", m)
	}
	// The servers file gets a plain server= line per upstream resolver.
	out := sourceEntrypointOf(t, policies["open"], `upstreams=(192.0.2.53 2001:db8::53) gdns_port="" granted_n=(); servers_conf`)
	if !strings.Contains(out, "\nserver=192.0.2.53\nserver=2001:db8::53\n") || strings.Contains(out, "server=/") {
		t.Errorf("the servers file of mode open:\n%s", out)
	}
}

// TestRenderModesRefuse checks what each mode refuses to render.
func TestRenderModesRefuse(t *testing.T) {
	domains := []Domain{{Name: "a.test", Ports: []uint16{443}}}
	cidrs := policies["open"].CIDRs
	for name, tc := range map[string]struct {
		p    Policy
		want string
	}{
		"none with a domain": {Policy{Mode: ModeNone, Domains: domains}, "mode none admits no names and no CIDRs"},
		"none with a CIDR":   {Policy{Mode: ModeNone, CIDRs: cidrs}, "mode none admits no names and no CIDRs"},
		"open with a domain": {Policy{Mode: ModeOpen, Domains: domains, CIDRs: cidrs}, "mode open admits every public name already"},
		"unknown mode":       {Policy{Mode: "closed"}, `unknown mode "closed", valid modes are "", "none" and "open"`},
		"upper case mode":    {Policy{Mode: "NONE"}, `unknown mode "NONE"`},
	} {
		t.Run(name, func(t *testing.T) {
			files, err := Render(tc.p)
			if err == nil || files != nil {
				t.Fatalf("Render: %v, %d files; want an error containing %q", err, len(files), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
