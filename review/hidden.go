package review

import (
	"path"
	"slices"
	"strings"
)

// HiddenRule is one pattern of workspace.hidden, in the order written: as
// in .gitignore, the last pattern that matches a file decides whether it
// is hidden, and "!pattern" takes a file back out.
type HiddenRule struct {
	Path string `json:"path"`
	// Effect says what the pattern does where it stands: "hides", "takes
	// back out" (of a pattern above), or "no effect" with the reason (a
	// pattern below decides, or nothing above hides the files).
	Effect string `json:"effect"`
	Origin
}

// hiddenRules describes the patterns of an ordered list, each with its
// effect among the others; origins are the patterns' origins.
func hiddenRules(patterns []string, origins []PathRule) []HiddenRule {
	out := []HiddenRule{}
	for i, p := range patterns {
		out = append(out, HiddenRule{Path: p, Effect: hiddenEffect(patterns, i), Origin: origins[i].Origin})
	}
	return out
}

// hiddenEffect says what patterns[i] does to the files it names: a
// pattern decides a file unless a later pattern matches it too.
func hiddenEffect(patterns []string, i int) string {
	p := patterns[i]
	sample := patternSample(strings.TrimPrefix(p, "!"))
	if j := decider(patterns, sample); j != i {
		if strings.HasPrefix(p, "!") {
			return "no effect: " + patterns[j] + " below hides them again"
		}
		return "no effect: " + patterns[j] + " below takes them back out"
	}
	if !strings.HasPrefix(p, "!") {
		return "hides"
	}
	if k := decider(patterns[:i], sample); k >= 0 && !strings.HasPrefix(patterns[k], "!") {
		return "takes back out of " + patterns[k] + " above"
	}
	return "no effect: no pattern above hides them"
}

// decider is the index of the last pattern that matches file, -1 for none.
func decider(patterns []string, file string) int {
	for i := len(patterns) - 1; i >= 0; i-- {
		if matches(strings.TrimPrefix(patterns[i], "!"), file) {
			return i
		}
	}
	return -1
}

// isHidden reports whether file is hidden under patterns.
func isHidden(patterns []string, file string) bool {
	i := decider(patterns, file)
	return i >= 0 && !strings.HasPrefix(patterns[i], "!")
}

// matches is the workspace entrypoint's test (hidden_tracked in
// workspace.sh.tmpl): a pattern without / matches the file's name at any
// depth, one with / the whole path.
func matches(pattern, file string) bool {
	name := file
	if !strings.Contains(pattern, "/") {
		name = path.Base(file)
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// patternSample is a file that pattern matches: each wildcard replaced by
// a plain character (the first of a class).
func patternSample(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*', '?':
			b.WriteByte('x')
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				b.WriteByte(c)
				continue
			}
			class := pattern[i+1 : i+1+end]
			if class == "" || class[0] == '!' || class[0] == '^' {
				b.WriteByte('\x01') // a negated class: a byte no class names
			} else {
				b.WriteByte(class[0])
			}
			i += end + 1
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteByte(pattern[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hiddenList is the ordered patterns of the top level or of a profile
// (the top-level ones, then its own), with the key of each.
type hiddenList struct {
	patterns []string
	origins  []Origin
}

func topHidden(s *Sandbox) hiddenList {
	var l hiddenList
	for _, r := range s.Filesystem.Hidden {
		l.patterns, l.origins = append(l.patterns, r.Path), append(l.origins, r.Origin)
	}
	return l
}

func profileHidden(s *Sandbox, p ProfileView) hiddenList {
	l := topHidden(s)
	for _, r := range p.HiddenRules {
		l.patterns, l.origins = append(l.patterns, r.Path), append(l.origins, r.Origin)
	}
	return l
}

// hiddenRows compares what the patterns hide, not the patterns: every
// file that a pattern of either side names (its sample) is hidden or not
// on each side; a file no longer hidden widens, one newly hidden narrows.
// A profile's rows are those where the profile moves otherwise than the
// top level.
func hiddenRows(base, head *Sandbox) []DiffRow {
	bt, ht := topHidden(base), topHidden(head)
	rows, top := compareHidden("", bt, ht, nil, base, head)
	for _, hp := range head.Profiles {
		i := slices.IndexFunc(base.Profiles, func(p ProfileView) bool { return p.Name == hp.Name })
		if i < 0 || (len(hp.HiddenRules) == 0 && len(base.Profiles[i].HiddenRules) == 0) {
			continue
		}
		r, _ := compareHidden(hp.Name, profileHidden(base, base.Profiles[i]), profileHidden(head, hp), top, base, head)
		rows = append(rows, r...)
	}
	return rows
}

// compareHidden returns the rows that take b to h, and each sample's kind
// (skip: the top level's kinds, which a profile's row must differ from).
func compareHidden(profile string, b, h hiddenList, skip map[string]string, base, head *Sandbox) ([]DiffRow, map[string]string) {
	var rows []DiffRow
	kinds := map[string]string{}
	seen := map[string]bool{}
	for _, p := range slices.Concat(b.patterns, h.patterns) {
		p = strings.TrimPrefix(p, "!")
		if seen[p] {
			continue
		}
		seen[p] = true
		sample := patternSample(p)
		was, is := isHidden(b.patterns, sample), isHidden(h.patterns, sample)
		if was == is {
			continue
		}
		kind, from, to := Narrows, "visible", "hidden"
		if was {
			kind, from, to = Widens, "hidden", "visible"
		}
		kinds[p] = kind
		if skip[p] == kind {
			continue
		}
		subject := p
		if profile != "" {
			subject = profile + " " + p
		}
		row := DiffRow{Kind: kind, Aspect: GainReach, What: "hidden", Subject: subject, From: from, To: to, Side: "working"}
		if j := decider(h.patterns, sample); j >= 0 {
			row.Origin = withLine(h.origins[j], head)
		}
		if row.Line == 0 {
			if j := decider(b.patterns, sample); j >= 0 {
				if o := withLine(b.origins[j], base); o.Line != 0 {
					row.Origin, row.Side = o, "base"
				}
			}
		}
		if row.Key == "" {
			row.Origin = withLine(Origin{Key: "workspace.hidden"}, head)
		}
		if kind == Widens {
			row.Gain = "the agent's clone may hold files matching " + p + ": the sandbox starts with them tracked"
		}
		rows = append(rows, row)
	}
	return rows, kinds
}
