package debian

import (
	"strings"
	"testing"
)

func TestCompareVersions(t *testing.T) {
	// want is the sign of CompareVersions(a, b); the cases come from dpkg's
	// own test suite (lib/dpkg/t/t-version.c) and from Debian's archive.
	cases := []struct {
		a, b string
		want int
	}{
		{"1.0", "1.0", 0},
		{"0:1.0", "1.0", 0},
		{"1.0", "1.0-0", 0},
		{"1.0~rc1", "1.0", -1},
		{"1.0~rc1", "1.0~rc2", -1},
		{"1.0~~", "1.0~", -1},
		{"1.0~", "1.0", -1},
		{"1.0", "1.0+", -1},
		{"1.0", "1.0a", -1},
		{"1.0a", "1.0+", -1},
		{"1.0a", "1.0b", -1},
		{"1:0.1", "2.0", 1},
		{"2:0", "1:99", 1},
		{"1.0-1", "1.0-1+b1", -1},
		{"1.0-1+b1", "1.0-2", -1},
		{"2.39.5-0+deb12u2", "2.39.5-0+deb12u3", -1},
		{"1:2.39.5-0+deb12u2", "1:2.39.5-0+deb12u3", -1},
		{"2.36-9+deb12u9", "2.36-9+deb12u10", -1},
		{"1.2", "1.10", -1},
		{"1.002", "1.2", 0},
		{"1.0-1", "1.0-1", 0},
		{"1.0-a", "1.0-1", 1},
		{"0:0-0", "0:0-0", 0},
		{"0:0-0", "0:0", 0},
		{"0:0.0-0", "0:0-0", 1},
		{"0:0-0", "0:0.0-0", -1},
		{"0:0-0", "0:0-00", 0},
		{"0:0-0", "0:0-1", -1},
		{"0:0-a", "0:0-b", -1},
		{"0:0-1", "0:1-0", -1},
		{"0:0.0a-0", "0:0.0-0", 1},
		{"0:0-0", "0:0a-0", -1},
		{"0:a", "0:b", -1},
		{"1:0", "0:1", 1},
		{"000000000000000000001:0", "2:0", -1},
		{"99999999999999999999:0", "1:0", 1},
		{"1.0-1-1", "1.0-1", 1}, // upstream 1.0-1 > 1.0
		{"0:09", "0:9", 0},
		{"0:9-0", "0:09-0", 0},
		{"1.0~beta", "1.0~alpha", 1},
		{"0:0~", "0:0", -1},
		{"0:0~-0", "0:0-0", -1},
		{"0:0-0~", "0:0-0", -1},
		{"0:0~a", "0:0~", 1},
	}
	for _, c := range cases {
		if got := sign(CompareVersions(c.a, c.b)); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := sign(CompareVersions(c.b, c.a)); got != -c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestValidVersion(t *testing.T) {
	cases := []struct {
		v    string
		want bool
	}{
		{"1.0", true},
		{"0", true},
		{"1:2.39.5-0+deb12u2", true},
		{"2.36-9+deb12u9", true},
		{"1.0~rc1-1~bpo12+1", true},
		{"1.0-1-1", true},
		{"1.0+dfsg.1-2", true},
		{"0:1.0", true},
		{"", false},
		{"a1.0", false},
		{"1.0-", false},
		{":1.0", false},
		{"a:1.0", false},
		{"-1:1.0", false},
		{"99999999999:1.0", false},
		{"1:", false},
		{"1.0 ", false},
		{"1.0\x00", false},
		{"1.0_1", false},
		{"1:1:1.0", false},
		{"1.0-1_2", false},
		{"1.0-1:2", false},
		{"1" + strings.Repeat(".0", 64), false},
		{"1" + strings.Repeat("0", 127), true},
	}
	for _, c := range cases {
		if got := ValidVersion(c.v); got != c.want {
			t.Errorf("ValidVersion(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestValidPackageName(t *testing.T) {
	cases := []struct {
		n    string
		want bool
	}{
		{"git", true},
		{"ca-certificates", true},
		{"libstdc++6", true},
		{"dnsmasq-base", true},
		{"0ad", true},
		{"g++", true},
		{"x", false},
		{"", false},
		{"Git", false},
		{"-git", false},
		{"+git", false},
		{"git=1.0", false},
		{"git:amd64", false},
		{"git\x00", false},
		{"a b", false},
		{"g" + strings.Repeat("a", 127), true},
		{"g" + strings.Repeat("a", 128), false},
	}
	for _, c := range cases {
		if got := ValidPackageName(c.n); got != c.want {
			t.Errorf("ValidPackageName(%q) = %v, want %v", c.n, got, c.want)
		}
	}
}
