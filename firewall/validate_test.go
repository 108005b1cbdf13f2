package firewall

import (
	"net/netip"
	"slices"
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

// TestNormalizeNever checks the two never lists: an unmasked or invalid
// prefix and a name that is not normalized are refused, naming the entry;
// valid entries come back sorted and without duplicates.
func TestNormalizeNever(t *testing.T) {
	for name, tc := range map[string]struct {
		p    Policy
		want string
	}{
		"unmasked never":  {Policy{Never: []netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")}}, "never 10.1.2.3/8: not a masked, valid prefix"},
		"invalid never":   {Policy{Never: []netip.Prefix{{}}}, "never invalid Prefix: not a masked, valid prefix"},
		"never name":      {Policy{NeverNames: []string{"Example.com"}}, `never "Example.com": name "Example.com" is not normalized`},
		"never bad name":  {Policy{NeverNames: []string{"a.com;flush ruleset"}}, `never "a.com;flush ruleset": `},
		"never one label": {Policy{NeverNames: []string{"com"}}, "at least two labels"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := normalize(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("normalize: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	p, err := normalize(Policy{
		Never: []netip.Prefix{
			netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("10.0.0.0/8"),
			netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("10.0.0.0/8"),
		},
		NeverNames: []string{"b.example", "a.example", "b.example"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantNever := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	if !slices.Equal(p.Never, wantNever) || !slices.Equal(p.NeverNames, []string{"a.example", "b.example"}) {
		t.Errorf("normalize: never %v and names %q, want %v and [a.example b.example]", p.Never, p.NeverNames, wantNever)
	}
}

// TestNormalizeReportsAll checks that one run reports every error of a
// policy, list by list, each entry named, the mode's last; and that the
// valid entries beside the invalid ones do not hide them.
func TestNormalizeReportsAll(t *testing.T) {
	p := Policy{
		Mode: ModeNone,
		Domains: []Domain{
			{Name: "b.example", Ports: []uint16{443}},
			{Name: "Bad.example", Ports: []uint16{443}},
			{Name: "b.example", Ports: []uint16{80}},
		},
		CIDRs: []CIDR{
			{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []uint16{443}},
			{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Ports: []uint16{80}},
			{Prefix: netip.MustParsePrefix("192.0.2.0/24")},
		},
		Never:      []netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")},
		NeverNames: []string{"com"},
	}
	got, err := normalize(p)
	if err == nil {
		t.Fatalf("normalize accepted %+v", got)
	}
	if got.Domains != nil || got.CIDRs != nil {
		t.Errorf("normalize returned lists with an error: %+v", got)
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{
		`domain "Bad.example": `,
		"cidr 192.0.2.0/24: no ports",
		`domain "b.example": listed twice`,
		"cidr 10.0.0.0/8: listed twice",
		"never 10.1.2.3/8: not a masked, valid prefix",
		`never "com": `,
		"mode none admits no names and no CIDRs",
	}
	if len(lines) != len(want) {
		t.Fatalf("normalize reported %d errors, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d is %q, want it to start with %q", i+1, lines[i], w)
		}
	}
}
