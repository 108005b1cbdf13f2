package firewall

import (
	"fmt"
	"strings"
	"testing"
)

// TestIsName checks the entrypoint's own check of a granted name.
func TestIsName(t *testing.T) {
	for name, ok := range map[string]bool{
		"example.com":                                true,
		"a-b.c0.example":                             true,
		"xn--bcher-kva.example":                      true,
		strings.Repeat("a", 63) + ".test":            true,
		strings.Repeat("abcdefghi.", 24) + "example": true, // 247 characters
		"":                                false,
		"example":                         false,
		"Example.com":                     false,
		"example.com.":                    false,
		".example.com":                    false,
		"example..com":                    false,
		"-a.example.com":                  false,
		"a-.example.com":                  false,
		"*.example.com":                   false,
		"exa_mple.com":                    false,
		"example.com;ls":                  false,
		"example.com\n":                   false,
		"example.com x":                   false,
		"198.18.0.11":                     false,
		"example.123":                     false,
		"bücher.example":                  false,
		strings.Repeat("a", 64) + ".test": false,
		strings.Repeat("abcdefghi.", 26) + "example": false, // 267 characters
	} {
		out := sourceEntrypoint(t, fmt.Sprintf("if is_name %q; then echo yes; else echo no; fi", name))
		if got := strings.TrimSpace(out) == "yes"; got != ok {
			t.Errorf("is_name %q: %s, want %v", name, out, ok)
		}
	}
}

// TestNameMillis reads nft's expiry times as milliseconds, and the marks
// of the slots.
func TestNameMillis(t *testing.T) {
	out := sourceEntrypoint(t, `for d in 1d2h3m4s5ms 2s996ms 996ms 1h0m1s; do millis "$d"; done; echo "$(name_mark 1) $(name_mark 4095)"`)
	want := "93784005\n2996\n996\n3601000\n0x00000100 0x000fff00\n"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestGrantDNSConf: the grant resolver's configuration for nested granted
// names sends each to the upstream resolvers and its addresses to its own
// slot's sets and those of the granted names above it; the servers file
// routes the allowed names that a granted name covers to the grant resolver.
// The names of elevation.never go to the upstream resolvers too, their
// addresses to the sets the firewall refuses before every grant; with such
// names, every name goes through the never filter (port 56), which asks the
// upstream resolvers.
func TestGrantDNSConf(t *testing.T) {
	out := sourceEntrypoint(t, `upstreams=(192.0.2.53 2001:db8::53)
granted_k=(3 7) granted_n=(github.com api.github.com) gdns_port=55
grant_dns_conf | grep -v '^#'
servers_conf | grep -v '^#'`)
	want := `server=/github.com/127.0.0.1#56
nftset=/github.com/4#inet#agentbox#gn_3_v4,6#inet#agentbox#gn_3_v6
server=/api.github.com/127.0.0.1#56
nftset=/api.github.com/4#inet#agentbox#gn_3_v4,6#inet#agentbox#gn_3_v6,4#inet#agentbox#gn_7_v4,6#inet#agentbox#gn_7_v6
server=/corp.example/127.0.0.1#56
nftset=/corp.example/4#inet#agentbox#never_name_v4,6#inet#agentbox#never_name_v6
server=/api.github.com/127.0.0.1#55
server=/example.test/192.0.2.53
server=/example.test/2001:db8::53
server=/github.com/127.0.0.1#55
server=/registry.acme.test/192.0.2.53
server=/registry.acme.test/2001:db8::53
server=/github.com/127.0.0.1#55
server=/api.github.com/127.0.0.1#55
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}
