package denials

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/validate"
	"golang.org/x/net/publicsuffix"
)

// Suggestion is one entry of network.domains that would allow what was
// refused.
type Suggestion struct {
	Domain string   `json:"domain"` // "api.example.com", or "*.cdn.example.com"
	Covers []string `json:"covers"` // the refused names it allows, sorted
	Count  int      `json:"count"`  // their refusals
	Types  []string `json:"types"`  // their query types, sorted
}

// noiseSuffixes are names no policy should list: reverse lookups and names
// that are never public (.local is mDNS; .home.arpa, RFC 8375). .test stays:
// real projects' tests use it.
var noiseSuffixes = []string{"in-addr.arpa", "ip6.arpa", "local", "localhost", "invalid", "home.arpa"}

// Suggest returns the entries of network.domains that would allow the
// refused names of rows, by count (most first), then domain. It leaves out:
//   - names that are not valid domains of agentbox.yaml (hostile or
//     malformed names, single-label names);
//   - reverse lookups and private-use names (noiseSuffixes);
//   - search-domain artefacts: NAME.LABEL, where NAME is another refused
//     name (single-label ones included) and LABEL a single label that is
//     not a top-level domain of the public suffix list (lan, home, corp):
//     a resolver's search list appended it. A multi-label search domain
//     cannot be told from a real name without the agent's resolv.conf,
//     and a name whose other half was allowed is not seen as refused:
//     both are suggested.
//
// A refused name whose parent was refused too is covered by the parent's
// plain entry (a plain name admits its subdomains). Two or more refused
// children of one zone below a public suffix (a.cdn.example.com and
// b.cdn.example.com) give one "*.cdn.example.com".
func Suggest(rows []Row) []Suggestion {
	all := map[string]bool{}
	for _, r := range rows {
		all[r.Name] = true
	}
	byName := map[string]Row{}
	for _, r := range rows {
		if !noise(r.Name) && !artefact(r.Name, all) {
			byName[r.Name] = r
		}
	}
	groups := map[string][]string{} // suggested domain -> names it covers
	for n := range byName {
		d := cover(n, byName)
		groups[d] = append(groups[d], n)
	}
	// Siblings left on their own share a wildcard of their parent.
	siblings := map[string][]string{}
	for d, names := range groups {
		if len(names) == 1 && d == names[0] {
			if parent, ok := wildcardZone(d); ok {
				siblings[parent] = append(siblings[parent], d)
			}
		}
	}
	for parent, names := range siblings {
		if len(names) >= 2 {
			for _, n := range names {
				delete(groups, n)
			}
			groups["*."+parent] = names
		}
	}
	var out []Suggestion
	for d, names := range groups {
		out = append(out, suggestion(d, names, byName))
	}
	slices.SortFunc(out, func(a, b Suggestion) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Domain, b.Domain)
	})
	return out
}

// noise reports a name no suggestion should name.
func noise(name string) bool {
	if _, wild, err := validate.Domain(name); err != nil || wild || name != strings.TrimSuffix(name, ".") {
		return true
	}
	for _, s := range noiseSuffixes {
		if name == s || strings.HasSuffix(name, "."+s) {
			return true
		}
	}
	return false
}

// artefact reports NAME.LABEL where NAME was refused too and LABEL is no
// top-level domain (example.com.au is a name of its own).
func artefact(name string, refused map[string]bool) bool {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || !refused[name[:i]] {
		return false
	}
	_, icann := publicsuffix.PublicSuffix(name[i+1:])
	return !icann
}

// cover is the refused name closest to the root that name is, or is a
// subdomain of: its plain entry admits name.
func cover(name string, refused map[string]Row) string {
	best := name
	for d := name; ; {
		_, parent, ok := strings.Cut(d, ".")
		if !ok {
			return best
		}
		if _, ok := refused[parent]; ok {
			best = parent
		}
		d = parent
	}
}

// wildcardZone is the parent of name when "*.parent" is narrow enough to
// suggest: the parent is at or below a registrable domain (example.com,
// example.co.uk), never a public suffix (com, co.uk, github.io).
func wildcardZone(name string) (string, bool) {
	_, parent, ok := strings.Cut(name, ".")
	if !ok {
		return "", false
	}
	reg, err := publicsuffix.EffectiveTLDPlusOne(parent)
	if err != nil || !(parent == reg || strings.HasSuffix(parent, "."+reg)) {
		return "", false
	}
	return parent, true
}

func suggestion(domain string, names []string, rows map[string]Row) Suggestion {
	s := Suggestion{Domain: domain}
	slices.Sort(names)
	s.Covers = names
	for _, n := range names {
		s.Count += rows[n].Count
		for _, t := range rows[n].Types {
			if !slices.Contains(s.Types, t) {
				s.Types = append(s.Types, t)
			}
		}
	}
	slices.Sort(s.Types)
	return s
}

// maxCovered is how many covered names a suggestion's comment lists.
const maxCovered = 5

// Line is the suggestion as a YAML list item of network.domains (indented
// for a paste under "network:" / "  domains:"), with what it covers in a
// comment: `    - api.example.com   # refused 3 times (A, AAAA)`.
func (s Suggestion) Line() string {
	entry := s.Domain
	if strings.HasPrefix(entry, "*") {
		entry = `"` + entry + `"` // a bare * starts a YAML alias
	}
	times := "times"
	if s.Count == 1 {
		times = "time"
	}
	comment := fmt.Sprintf("refused %d %s", s.Count, times)
	if len(s.Types) > 0 {
		comment += " (" + strings.Join(s.Types, ", ") + ")"
	}
	if len(s.Covers) > 1 || s.Covers[0] != s.Domain {
		shown := s.Covers[:min(len(s.Covers), maxCovered)]
		comment += ": " + strings.Join(shown, ", ")
		if more := len(s.Covers) - len(shown); more > 0 {
			comment += fmt.Sprintf(" and %d more", more)
		}
	}
	return fmt.Sprintf("    - %s   # %s", entry, comment)
}
