package denials

import (
	"reflect"
	"strings"
	"testing"
)

func rows(names ...string) []Row {
	var rs []Row
	for _, n := range names {
		rs = append(rs, Row{Name: n, Count: 1, Types: []string{"A"}, Why: whyName})
	}
	return rs
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		name string
		rows []Row
		want []string // Line()s
	}{
		{"one name", []Row{{Name: "api.example.com", Count: 3, Types: []string{"A", "AAAA"}}},
			[]string{"    - api.example.com   # refused 3 times (A, AAAA)"}},
		{"noise left out", rows("1.0.0.127.in-addr.arpa", "b.0.0.ip6.arpa", "printer.local", "localhost", "x.localhost",
			"agentbox-probe.invalid", "wpad", "router.home.arpa", "\x1b[2J.example", "with space.example", "a..example",
			"_dmarc.example.com", "10.0.0.1"),
			nil},
		{".test stays", rows("db.test"), []string{"    - db.test   # refused 1 time (A)"}},
		{"search-domain artefacts", rows("api.example.com", "api.example.com.lan", "api.example.com.corp", "wpad.lan", "wpad", "example.com.au"),
			[]string{"    - api.example.com   # refused 1 time (A)", "    - example.com.au   # refused 1 time (A)"}},
		{"siblings give a wildcard", append(rows("a.cdn.example.com", "b.cdn.example.com", "c.cdn.example.com", "other.example.org"),
			Row{Name: "x.example.org", Count: 2}),
			[]string{"    - \"*.cdn.example.com\"   # refused 3 times (A): a.cdn.example.com, b.cdn.example.com, c.cdn.example.com",
				"    - \"*.example.org\"   # refused 3 times (A): other.example.org, x.example.org"}},
		{"no wildcard of a public suffix", rows("a.com", "b.com", "x.github.io", "y.github.io", "a.co.uk", "b.co.uk"),
			[]string{"    - a.co.uk   # refused 1 time (A)", "    - a.com   # refused 1 time (A)", "    - b.co.uk   # refused 1 time (A)",
				"    - b.com   # refused 1 time (A)", "    - x.github.io   # refused 1 time (A)", "    - y.github.io   # refused 1 time (A)"}},
		{"a refused parent covers its subdomains", rows("example.net", "a.example.net", "b.c.example.net", "d.example.net"),
			[]string{"    - example.net   # refused 4 times (A): a.example.net, b.c.example.net, d.example.net, example.net"}},
		{"many covered", rows("a.z.example", "b.z.example", "c.z.example", "d.z.example", "e.z.example", "f.z.example", "g.z.example"),
			[]string{"    - \"*.z.example\"   # refused 7 times (A): a.z.example, b.z.example, c.z.example, d.z.example, e.z.example and 2 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range Suggest(tt.rows) {
				got = append(got, s.Line())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestSuggestDeterministic: the same rows in any order give the same
// suggestions.
func TestSuggestDeterministic(t *testing.T) {
	rs := rows("a.cdn.example.com", "b.cdn.example.com", "x.example.org", "y.example.net", "z.example.net", "q.example.com")
	first := Suggest(rs)
	for i := range 20 {
		rs[0], rs[i%len(rs)] = rs[i%len(rs)], rs[0]
		if got := Suggest(rs); !reflect.DeepEqual(got, first) {
			t.Fatalf("run %d: %+v, first %+v", i, got, first)
		}
	}
}
