package egress

import "testing"

// TestParseGrantsNames: the egress lists granted names as NAME PORT
// SECONDS_LEFT, after the prefixes; anything else is refused.
func TestParseGrantsNames(t *testing.T) {
	rows, err := parseGrants("198.18.7.0/24 443 10\ndocs.example.com 8443 59\n", now)
	if err != nil || len(rows) != 2 || rows[1].Dest != "docs.example.com" || rows[1].Port != 8443 || rows[1].SecondsLeft != 59 {
		t.Errorf("parseGrants: %v, %v", rows, err)
	}
	for _, bad := range []string{"docs.example.com\x1b 443 5\n", "docs.example.com 443\n", "-x.example 443 5\n"} {
		if _, err := parseGrants(bad, now); err == nil {
			t.Errorf("parseGrants(%q) passed", bad)
		}
	}
}
