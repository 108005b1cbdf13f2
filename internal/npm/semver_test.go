package npm

import (
	"strings"
	"testing"
)

// rangeCases follow node-semver's documented range semantics (its README and
// the range-include / range-exclude fixtures), in strict mode without
// includePrerelease. Each was also checked against npm's bundled semver.
var rangeCases = []struct {
	rng, ver string
	want     bool
}{
	// Primitive comparators and whitespace.
	{"1.0.0", "1.0.0", true},
	{"1.0.0", "1.0.1", false},
	{"=1.2.3", "1.2.3", true},
	{"=v1.2.3", "1.2.3", true},
	{"v1.2.3", "1.2.3", true},
	{">=1.0.0", "1.0.0", true},
	{">=1.0.0", "0.1.0", false},
	{">1.0.0", "1.0.1", true},
	{">1.0.0", "1.0.0", false},
	{"<=2.0.0", "2.0.0", true},
	{"<=2.0.0", "2.0.1", false},
	{"<2.0.0", "1.9999.9999", true},
	{"<2.0.0", "2.0.0", false},
	{">= 1.0.0", "1.0.0", true},
	{">=   1.0.0", "1.1.0", true},
	{"> 1.0.0", "1.0.1", true},
	{"<\t2.0.0", "0.2.9", true},
	{"<    2.0.0", "2.0.0", false},
	{"> =1.2.3", "1.2.3", true},
	{" 1.2.3 ", "1.2.3", true},
	{"1.2.3-alpha", "1.2.3-alpha+build", true},
	{">=0.1.97", "v0.1.97", true},
	{">=1.2.1 1.2.3", "1.2.3", true},
	{">=1.2.3 >=1.2.1", "1.2.3", true},
	{">=1.2.3 <1.2.5", "1.2.5", false},
	{">=9007199254740991.0.0", "9007199254740991.0.0", true},

	// Unions.
	{"0.1.20 || 1.2.4", "1.2.4", true},
	{"0.1.20 || 1.2.4", "1.2.3", false},
	{">=0.2.3 || <0.0.1", "0.0.0", true},
	{">=0.2.3 || <0.0.1", "0.2.4", true},
	{">=0.2.3 || <0.0.1", "0.0.3", false},
	{"1.2.3\n||\t2.0.0", "2.0.0", true},
	{"1.x || >=2.5.0 || 5.0.0 - 7.2.3", "1.5.0", true},
	{"1.x || >=2.5.0 || 5.0.0 - 7.2.3", "2.4.0", false},
	{"||", "1.3.4", true},
	{"1.2.3 ||", "9.9.9", true},

	// X-ranges and partial versions.
	{"", "1.0.0", true},
	{"*", "1.2.3", true},
	{"x", "1.2.3", true},
	{">=*", "0.2.4", true},
	{"2.x.x", "2.1.3", true},
	{"2.x.x", "3.1.3", false},
	{"2.x.x", "1.1.3", false},
	{"1.2.x", "1.2.3", true},
	{"1.2.x", "1.3.3", false},
	{"1.2.x || 2.x", "2.1.3", true},
	{"1.2.x || 2.x", "1.1.3", false},
	{"2.*.*", "2.1.3", true},
	{"1.2.*", "1.3.3", false},
	{"1.X", "1.9.0", true},
	{"~1.x.5", "1.9.0", true},
	{"2", "2.1.2", true},
	{"2", "1.1.2", false},
	{"2.3", "2.3.1", true},
	{"2.3", "2.4.1", false},
	{"=0.7.x", "0.7.2", true},
	{"=0.7.x", "0.8.2", false},
	{"<=0.7.x", "0.7.2", true},
	{"<=0.7.x", "0.8.0", false},
	{">=0.7.x", "0.7.2", true},
	{">=0.7.x", "0.6.2", false},
	{"<0.7.x", "0.7.2", false},
	{"<0.7.x", "0.6.9", true},
	{"<=7.x", "7.9.9", true},
	{"<=7.x", "8.0.0", false},
	{">1", "1.9.9", false},
	{">1", "2.0.0", true},
	{">1.2", "1.2.8", false},
	{">1.2", "1.3.0", true},
	{">=1", "1.0.0", true},
	{">=1.2", "1.1.1", false},
	{"<1", "1.0.0", false},
	{"< 1.2", "1.1.1", true},
	{"<x", "0.0.0", false},
	{">*", "1.0.0", false},
	{"<x || 1.0.0", "1.0.0", true},
	{"vv1.2", "1.2.5", true},
	{"==1.x", "1.5.0", true},

	// Tilde.
	{"~1.2.3", "1.2.9", true},
	{"~1.2.3", "1.3.0", false},
	{"~1.2.3", "1.2.2", false},
	{"~1.2", "1.2.0", true},
	{"~1.2", "1.3.0", false},
	{"~1", "1.9.9", true},
	{"~1", "2.0.0", false},
	{"~1", "0.2.3", false},
	{"~0.2.3", "0.2.9", true},
	{"~0.2.3", "0.3.0", false},
	{"~0.0.1", "0.0.2", true},
	{"~0.0.1", "0.1.0", false},
	{"~x", "0.0.9", true},
	{"~>3.2.1", "3.2.2", true},
	{"~>3.2.1", "3.3.2", false},
	{"~> 1", "1.2.3", true},
	{"~ 1.0.3", "1.0.12", true},
	{"~>=1.2", "1.2.5", true},
	{"~ > 1.2", "1.2.5", true},
	{"~> >1.2", "1.2.5", true},
	{"~= 1.2", "1.2.5", true},
	{"~>= 1.2", "1.3.0", false},
	{"~1.2.1 >=1.2.3", "1.2.3", true},
	{"~1.2.1 =1.2.3", "1.2.3", true},
	{"~1.2.1 1.2.3 >=1.2.3", "1.2.3", true},
	{"~v0.5.4-pre", "0.5.5", true},
	{"~v0.5.4-pre", "0.5.4", true},
	{"~v0.5.4-beta", "0.5.4-alpha", false},
	{"~1.2.3-beta.2", "1.2.3-beta.4", true},
	{"~1.2.3-beta.2", "1.2.4-beta.2", false},
	{"~1.2", "1.2.0-beta", false},

	// Caret.
	{"^1.2.3", "1.8.1", true},
	{"^1.2.3", "2.0.0", false},
	{"^1.2.3", "1.2.2", false},
	{"^0.2.3", "0.2.9", true},
	{"^0.2.3", "0.3.0", false},
	{"^0.0.3", "0.0.3", true},
	{"^0.0.3", "0.0.4", false},
	{"^0.1", "0.1.2", true},
	{"^0.1", "0.2.0", false},
	{"^1.2", "1.4.2", true},
	{"^1.2", "1.1.9", false},
	{"^1.2 ^1", "1.4.2", true},
	{"^ 1.2 ^ 1", "1.4.2", true},
	{"^1.2.x", "1.9.0", true},
	{"^1.2.x", "1.1.0", false},
	{"^1.x", "1.9.0", true},
	{"^1.x", "2.0.0", false},
	{"^0.x", "0.9.0", true},
	{"^0.x", "1.0.0", false},
	{"^0.0.x", "0.0.9", true},
	{"^0.0.x", "0.1.0", false},
	{"^0.0", "0.0.5", true},
	{"^0.0", "0.1.0", false},
	{"^x", "1.2.3", true},
	{"^=v1.2.3", "1.3.0", true},
	{"^= 1.2", "1.9.0", true},
	{"^1.2.3+build", "1.3.0", true},
	{"^1.2.3+build", "2.0.0", false},
	{"^1.2.3-alpha", "1.2.3-pre", true},
	{"^1.2.0-alpha", "1.2.0-pre", true},
	{"^0.0.1-alpha", "0.0.1-beta", true},
	{"^0.0.1-alpha", "0.0.1", true},
	{"^0.1.1-alpha", "0.1.1-beta", true},
	{"^1.2.3-beta.2", "1.2.3-beta.4", true},
	{"^1.2.3-beta.2", "1.2.4-beta.2", false},
	{"^1.2.3", "1.2.3-beta", false},
	{"^1.2.3", "2.0.0-alpha", false},
	{"^1.0.0", "2.0.0-rc1", false},
	{"^0.0.1", "0.0.2-alpha", false},

	// Hyphen ranges.
	{"1.0.0 - 2.0.0", "1.2.3", true},
	{"1.0.0 - 2.0.0", "2.2.3", false},
	{"1.2.3 - 2.3.4", "2.3.4", true},
	{"1.2.3 - 2.3.4", "2.3.5", false},
	{"1.2.3 - 2.3.4", "1.2.2", false},
	{"1.2 - 2.3.4", "1.2.0", true},
	{"1.2.3 - 2.3", "2.3.9", true},
	{"1.2.3 - 2.3", "2.4.0", false},
	{"1.2.3 - 2", "2.9.9", true},
	{"1.2.3 - 2", "3.0.0", false},
	{"x - 1.0.0", "0.9.7", true},
	{"x - 1.x", "0.9.7", true},
	{"1.0.0 - x", "1.9.7", true},
	{"1.x - x", "1.9.7", true},
	{"= 1.2 - 2", "2.5.0", true},
	{"v1.2.3 - =2.0.0-rc.1", "2.0.0-rc.0", true},
	{"v1.2.3 - =2.0.0-rc.1", "2.0.0", false},
	{"1.2.3-pre+asdf - 2.4.3-pre+asdf", "1.2.3", true},
	{"1.2.3-pre+asdf - 2.4.3-pre+asdf", "1.2.3-pre.2", true},
	{"1.2.3-pre+asdf - 2.4.3-pre+asdf", "2.4.3-alpha", true},
	{"1.2.3+asdf - 2.4.3+asdf", "1.2.3", true},
	{"1.2.3+asdf - 2.4.3+asdf", "1.2.3-pre.2", false},
	{"1.2.3+asdf - 2.4.3+asdf", "2.4.3-alpha", false},

	// Prerelease rule.
	{"*", "1.0.0-rc1", false},
	{">1.2", "1.3.0-beta", false},
	{"<=1.2.3", "1.2.3-beta", false},
	{"<1.2.3", "1.2.3-beta", false},
	{"=1.2.3", "1.2.3-beta", false},
	{"=0.7.x", "0.7.0-asdf", false},
	{">1.2.3-alpha.3", "1.2.3-alpha.7", true},
	{">1.2.3-alpha.3", "3.4.5-alpha.9", false},
	{">1.2.3-alpha.3", "3.4.5", true},
	{">=1.2.3-beta.2 <1.2.4", "1.2.3-beta.10", true},
	{"<1.2.3-1", "1.2.3-alpha", false},
	{"<1.2.3-alpha", "1.2.3-1", true},
	{"* || 1.2.3-beta", "1.2.3-beta", false},
	{"1.2.3-beta || *", "1.2.3-beta", false},
	{">=1.0.0 || 1.2.3-beta", "1.2.3-beta", true},
	{"1.2.3 || || 1.2.3-beta", "1.2.3-beta", false},
	{">=0.0.0 <=0.0.0-beta", "0.0.0-alpha", true},
	{">=v0.0.0 <=0.0.0-beta", "0.0.0-alpha", false},
}

func TestSatisfies(t *testing.T) {
	for _, tc := range rangeCases {
		r, err := ParseRange(tc.rng)
		if err != nil {
			t.Errorf("ParseRange(%q): %v", tc.rng, err)
			continue
		}
		v, err := ParseVersion(tc.ver)
		if err != nil {
			t.Fatalf("ParseVersion(%q): %v", tc.ver, err)
		}
		if got := r.Satisfies(v); got != tc.want {
			t.Errorf("%q satisfies %q = %v, want %v", tc.ver, tc.rng, got, tc.want)
		}
	}
}

// badRanges are rejected by node-semver in strict mode as well.
var badRanges = []string{
	"1.2.3 - 2.3.4 - 3",
	"1.2.3 -",
	"- 1.2.3",
	">=1.2.3 -2",
	">=",
	"< 1.2.3 >",
	"~",
	"^",
	"~^1.2",
	"^~1.2",
	">~1.2",
	"=>1.2.3",
	"foo",
	"1.2.3 foo",
	"1.2.3.4",
	"1.2.x.3",
	"1.x.5",
	"x.1",
	"*.2.3",
	"01.2.3",
	">01.02.03",
	"1.02",
	"1.2.3-01",
	"1.2.3-",
	"1.2.3-beta..1",
	"~1.2.3beta",
	"vv1.2.3",
	"v=1.2.3",
	"==1.2.3",
	"v",
	"x.y",
	"1.2.3 ||| 2.0.0",
	"9007199254740992.0.0",
	"1.9007199254740992",
	"^9007199254740991.0.0",
	"~1.9007199254740991",
	">9007199254740991",
	strings.Repeat("1", 257),
}

// unsupported are odd inputs node-semver accepts that this package rejects
// on purpose; see the package documentation.
var unsupported = []string{
	"1.2.3*",
	"*1.2.3",
	">*1.2.3",
	"1.2.3 +build",
}

func TestParseRangeErrors(t *testing.T) {
	for _, s := range append(badRanges, unsupported...) {
		_, err := ParseRange(s)
		if err == nil {
			t.Errorf("ParseRange(%q) succeeded, want an error", s)
			continue
		}
		if want := "invalid npm version range "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseRange(%q) error %q does not start with %q", s, err, want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1.2.3", "1.2.3"},
		{"v1.2.3", "1.2.3"},
		{" \t1.2.3\n", "1.2.3"},
		{"1.2.3-alpha.1+build.5", "1.2.3-alpha.1+build.5"},
		{"0.0.0-0", "0.0.0-0"},
		{"1.2.3--", "1.2.3--"},
		{"1.2.3-0a.00b", "1.2.3-0a.00b"},
		{"1.2.3+001", "1.2.3+001"},
		{"9007199254740991.0.0", "9007199254740991.0.0"},
		{"=1.2.3", ""},
		{"vv1.2.3", ""},
		{"v 1.2.3", ""},
		{"", ""},
		{"1.2", ""},
		{"1.2.3.4", ""},
		{"01.2.3", ""},
		{"1.2.3-01", ""},
		{"1.2.3-", ""},
		{"1.2.3+", ""},
		{"1.2.3+a..b", ""},
		{"1.2.3beta", ""},
		{"9007199254740992.0.0", ""},
		{"1.2.3-" + strings.Repeat("a", 251), ""},
	} {
		v, err := ParseVersion(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("ParseVersion(%q) = %v, want an error", tc.in, v)
		case tc.want == "" && !strings.HasPrefix(err.Error(), "invalid npm version "):
			t.Errorf("ParseVersion(%q) error %q", tc.in, err)
		case tc.want != "" && err != nil:
			t.Errorf("ParseVersion(%q): %v", tc.in, err)
		case tc.want != "" && v.String() != tc.want:
			t.Errorf("ParseVersion(%q) = %q, want %q", tc.in, v, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	// Ascending, from the semver 2.0 specification's precedence example and
	// node-semver's comparison fixtures.
	order := []string{
		"0.0.0-0", "0.0.0", "1.0.0-0", "1.0.0-1", "1.0.0-9", "1.0.0-10", "1.0.0-a",
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0",
		"1.99.99", "2.0.0",
	}
	for i, a := range order {
		for j, b := range order {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(mustVersion(t, a), mustVersion(t, b)); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
	if got := Compare(mustVersion(t, "1.0.0+a"), mustVersion(t, "1.0.0+b")); got != 0 {
		t.Errorf("build metadata changed the order: %d", got)
	}
}

func TestMaxSatisfying(t *testing.T) {
	for _, tc := range []struct {
		versions []string
		rng      string
		want     string
	}{
		{[]string{"1.2.3", "1.2.4", "1.3.0", "2.0.0-beta", "bogus", "1.9"}, "^1.2.3", "1.3.0"},
		{[]string{"1.2.3+a", "1.2.3+b"}, "1.2.3", "1.2.3+a"},
		{[]string{"2.0.0-beta.1", "2.0.0-beta.2", "2.0.0-beta.10", "2.1.0-rc.1"}, "^2.0.0-beta.1", "2.0.0-beta.10"},
		{[]string{"v1.0.0", "1.0.1 "}, "1.x", "1.0.1 "},
		{[]string{"1.0.0", "3.0.0"}, "2.x", ""},
		{nil, "*", ""},
	} {
		r, err := ParseRange(tc.rng)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := MaxSatisfying(tc.versions, r)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("MaxSatisfying(%q, %q) = %q, %v, want %q", tc.versions, tc.rng, got, ok, tc.want)
		}
	}
}

func mustVersion(t *testing.T, s string) Version {
	t.Helper()
	v, err := ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzParseRange checks that no input makes ParseRange panic and that every
// version satisfies the range made of itself.
func FuzzParseRange(f *testing.F) {
	for _, tc := range rangeCases {
		f.Add(tc.rng)
		f.Add(tc.ver)
	}
	for _, s := range badRanges {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRange(s); err == nil {
			r.Satisfies(Version{})
		}
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		r, err := ParseRange(v.String())
		if err != nil {
			t.Fatalf("version %q: ParseRange(%q): %v", s, v.String(), err)
		}
		if !r.Satisfies(v) {
			t.Fatalf("%q does not satisfy the range %q", s, v.String())
		}
	})
}
