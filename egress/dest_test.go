package egress

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestParseDest(t *testing.T) {
	for in, want := range map[string]string{
		"198.18.13.5":             "198.18.13.5/32 [443]",
		"198.18.7.0/24:80,443,80": "198.18.7.0/24 [80 443]",
		"2001:2::/48":             "2001:2::/48 [443]",
		"[2001:2::1]:22":          "2001:2::1/128 [22]",
		"[2001:2::/48]":           "2001:2::/48 [443]",
		"example.com":             "name example.com [443]",
		"*.Example.com.:22,443":   "name example.com [22 443]",
		"xn--bcher-kva.example":   "name xn--bcher-kva.example [443]",
	} {
		dst, err := ParseDest(in)
		got := fmt.Sprint(dst.Prefix, " ", dst.Ports)
		if dst.Name != "" {
			got = fmt.Sprint("name ", dst.Name, " ", dst.Ports)
		}
		if err != nil || got != want || dst.String() != strings.Fields(strings.TrimPrefix(got, "name "))[0] {
			t.Errorf("ParseDest(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "[2001:2::1", "[2001:2::1]443", "198.18.13.5:", "198.18.13.5:https", "fe80::1%eth0", "::ffff:198.18.0.1",
		"example", "example.com:", "example.com:443:80", "[example.com]:443", "exa mple.com", "bücher.example", "example.123", "*.*.example.com", "-a.example.com"} {
		if _, err := ParseDest(in); err == nil {
			t.Errorf("ParseDest(%q) passed", in)
		}
	}
}
