package debian

import (
	"reflect"
	"testing"
)

func TestRelations(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		bad  bool
	}{
		{"", nil, false},
		{"libc6 (>= 2.34), libcurl3-gnutls (>= 7.56.1), perl", []string{"libc6", "libcurl3-gnutls", "perl"}, false},
		{"debconf (>= 0.5) | debconf-2.0", []string{"debconf", "debconf-2.0"}, false},
		{"python3:any, perl:any (>= 5.10)", []string{"python3", "perl"}, false},
		{"libc6:amd64 [amd64], foo <!nocheck>", []string{"libc6", "foo"}, false},
		{"awk (= 1.0)", []string{"awk"}, false},
		{"a,,b,", nil, true}, // "a" is not a valid name
		{"libc6,, gcc-12-base,", []string{"libc6", "gcc-12-base"}, false},
		{"Bad", nil, true},
		{"(>= 1)", nil, true},
	}
	for _, c := range cases {
		got, err := relations(c.in)
		if (err != nil) != c.bad {
			t.Errorf("relations(%q) error %v, want error %v", c.in, err, c.bad)
			continue
		}
		if !c.bad && !reflect.DeepEqual(got, c.want) {
			t.Errorf("relations(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
