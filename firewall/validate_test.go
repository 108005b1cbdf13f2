package firewall

import (
	"net/netip"
	"strings"
	"testing"
)

func TestRenderRejects(t *testing.T) {
	domain := func(name string, ports ...uint16) Policy {
		if ports == nil {
			ports = []uint16{443}
		}
		return Policy{Domains: []Domain{{Name: name, Ports: ports, Sources: []string{"test"}}}}
	}
	cidr := func(p netip.Prefix) Policy {
		return Policy{CIDRs: []CIDR{{Prefix: p, Ports: []uint16{443}}}}
	}
	for name, tc := range map[string]struct {
		p    Policy
		want string
	}{
		"semicolon":          {domain("a.com;flush ruleset"), "character ';' is not allowed"},
		"command":            {domain("$(x).example.com"), "character '$' is not allowed"},
		"newline":            {domain("a.com\nserver=/#/1.2.3.4"), "character '\\n' is not allowed"},
		"space":              {domain("a .com"), "character ' ' is not allowed"},
		"slash":              {domain("a.com/#"), "character '/' is not allowed"},
		"hash":               {domain("a#.com"), "character '#' is not allowed"},
		"upper case":         {domain("Example.com"), "not normalized"},
		"wildcard":           {domain("*.example.com"), "not normalized"},
		"trailing dot":       {domain("example.com."), "not normalized"},
		"leading hyphen":     {domain("-a.com"), "label \"-a\" must start and end with a letter or digit"},
		"empty label":        {domain("a..com"), "empty label"},
		"long label":         {domain(strings.Repeat("a", 64) + ".com"), "is longer than 63 characters"},
		"long name":          {domain(strings.Repeat("a.", 127) + "com"), "longer than 253"},
		"single label":       {domain("com"), "at least two labels"},
		"numeric":            {domain("10.0.0.1"), "looks like an IP address"},
		"empty name":         {domain(""), "empty name"},
		"port 0":             {domain("a.com", 443, 0), "invalid port 0"},
		"no ports":           {Policy{Domains: []Domain{{Name: "a.com"}}}, "no ports"},
		"duplicate port":     {domain("a.com", 443, 443), "port 443 listed twice"},
		"duplicate domain":   {Policy{Domains: []Domain{domain("a.com").Domains[0], domain("a.com").Domains[0]}}, "listed twice"},
		"source newline":     {Policy{Domains: []Domain{{Name: "a.com", Ports: []uint16{443}, Sources: []string{"x\nserver=/#/1.1.1.1"}}}}, "printable ASCII"},
		"unmasked prefix":    {cidr(netip.MustParsePrefix("10.1.2.3/8")), "host bits are set; did you mean \"10.0.0.0/8\"?"},
		"unmasked v6 prefix": {cidr(netip.MustParsePrefix("2001:2::1/48")), "host bits are set"},
		"invalid prefix":     {cidr(netip.Prefix{}), "invalid prefix"},
		"4in6 prefix":        {cidr(netip.MustParsePrefix("::ffff:10.0.0.0/104")), "IPv4-mapped"},
		"cidr port 0":        {Policy{CIDRs: []CIDR{{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []uint16{0}}}}, "invalid port 0"},
		"duplicate prefix": {Policy{CIDRs: []CIDR{
			{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []uint16{443}},
			{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []uint16{80}},
		}}, "listed twice"},
	} {
		t.Run(name, func(t *testing.T) {
			files, err := Render(tc.p)
			if err == nil {
				t.Fatalf("Render succeeded, want an error containing %q; rules.nft:\n%s", tc.want, files[rulesFile])
			}
			if files != nil {
				t.Errorf("Render returned files with an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestRenderAccepts(t *testing.T) {
	for _, name := range []string{"a.co", "xn--bcher-kva.example", "a-b.c-d.example", "1password.com", strings.Repeat("a", 63) + ".com"} {
		if _, err := Render(Policy{Domains: []Domain{{Name: name, Ports: []uint16{1, 65535}}}}); err != nil {
			t.Errorf("Render(%q): %v", name, err)
		}
	}
	for _, p := range []string{"10.0.0.0/8", "fd00::/8", "192.0.2.1/32", "0.0.0.0/1"} {
		if _, err := Render(Policy{CIDRs: []CIDR{{Prefix: netip.MustParsePrefix(p), Ports: []uint16{443}}}}); err != nil {
			t.Errorf("Render(%s): %v", p, err)
		}
	}
	// A /0 would turn the firewall off: refused here as in agentbox.yaml.
	for _, p := range []string{"0.0.0.0/0", "::/0"} {
		if _, err := Render(Policy{CIDRs: []CIDR{{Prefix: netip.MustParsePrefix(p), Ports: []uint16{443}}}}); err == nil {
			t.Errorf("Render(%s) succeeded", p)
		}
	}
}
