package config

import (
	"errors"
	"strings"
	"testing"
)

func TestAddPolicyDuplicates(t *testing.T) {
	const yaml = `network:
  domains:
    - API.example.com
    - {host: "*.cdn.example.com", ports: [443, 8443]}
  cidrs: [198.18.0.0/24]
`
	top := []string{"network"}
	entry := func(s string, ports ...uint16) PolicyEntry {
		t.Helper()
		if len(ports) == 0 {
			ports = nil
		}
		e, err := ParsePolicyEntry(s, ports)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		e    PolicyEntry
		want string // "" for a change, "unchanged", or the error
	}{
		{entry("api.example.com"), "unchanged"},
		{entry("api.example.com."), "unchanged"},
		{entry("*.cdn.example.com", 443, 8443), "unchanged"},
		{entry("api.example.com", 22), "agentbox.yaml:3:7: network.domains: api.example.com is there already, with ports (the default); edit it there"},
		{entry("*.cdn.example.com"), "agentbox.yaml:4:7: network.domains: *.cdn.example.com is there already, with ports [443 8443]; edit it there"},
		{entry("cdn.example.com"), ""}, // another entry than *.cdn.example.com
		{entry("*.api.example.com"), ""},
		{entry("198.18.0.0/24"), "unchanged"},
		{entry("198.18.0.0/25"), ""},
	} {
		out, err := AddPolicy([]byte(yaml), top, tc.e)
		switch {
		case tc.want == "unchanged":
			if !errors.Is(err, ErrPolicyUnchanged) {
				t.Errorf("%s: %v, want unchanged", tc.e, err)
			}
		case tc.want == "":
			if err != nil || !strings.Contains(string(out), tc.e.String()) {
				t.Errorf("%s: %v\n%s", tc.e, err, out)
			}
		default:
			if err == nil || err.Error() != tc.want {
				t.Errorf("%s: %v, want %s", tc.e, err, tc.want)
			}
		}
	}
}

func TestRemovePolicy(t *testing.T) {
	const yaml = "network:\n  domains: [a.example.com, \"*.b.example.com\"]\n"
	e, _ := ParsePolicyEntry("b.example.com", nil)
	if _, _, err := RemovePolicy([]byte(yaml), []string{"network"}, e); err == nil || !strings.Contains(err.Error(), "b.example.com is not in network.domains") {
		t.Errorf("removing b.example.com (the list has *.b.example.com): %v", err)
	}
	e, _ = ParsePolicyEntry("*.B.example.com", nil)
	out, _, err := RemovePolicy([]byte(yaml), []string{"network"}, e)
	if err != nil || string(out) != "network:\n  domains: [a.example.com]\n" {
		t.Errorf("removing *.B.example.com: %v\n%s", err, out)
	}
	if _, err := AddPolicy([]byte("network: [a]\n"), []string{"network"}, e); err == nil || !strings.HasPrefix(err.Error(), "agentbox.yaml:1:10: network: expected a mapping") {
		t.Errorf("network as a list: %v", err)
	}
}
