package npm

import (
	"fmt"
	"strings"
)

// Range is a parsed npm version range: a union of comparator sets. The zero
// Range is satisfied by nothing.
type Range struct {
	sets [][]comparator
	// any is set when some set is "*": node-semver then reduces the whole
	// range to "*", which no prerelease satisfies.
	any bool
}

// comparator is one plain comparison; op is "", "<", "<=", ">" or ">=".
type comparator struct {
	op string
	v  Version
}

// holds reports whether v passes c.
func (c comparator) holds(v Version) bool {
	d := Compare(v, c.v)
	switch c.op {
	case "<":
		return d < 0
	case "<=":
		return d <= 0
	case ">":
		return d > 0
	case ">=":
		return d >= 0
	}
	return d == 0
}

// ParseRange parses an npm version range such as "^1.2.3", "~1.2",
// "1.x || >=2.5.0" or "1.2.3 - 2.3.4".
func ParseRange(s string) (Range, error) {
	r, err := parseRange(s)
	if err != nil {
		return Range{}, fmt.Errorf("invalid npm version range %q: %w", s, err)
	}
	return r, nil
}

func parseRange(s string) (Range, error) {
	if len(s) > maxLen {
		return Range{}, fmt.Errorf("longer than %d bytes", maxLen)
	}
	var r Range
	norm := strings.Join(strings.FieldsFunc(s, isJSSpace), " ")
	for _, part := range strings.Split(norm, "||") {
		set, err := parseSet(strings.Trim(part, " "))
		if err != nil {
			return Range{}, err
		}
		r.any = r.any || len(set) == 0
		r.sets = append(r.sets, set)
	}
	return r, nil
}

// parseSet parses the comparators between two "||". Comparators that allow
// anything are left out, so an empty set means "*".
func parseSet(part string) ([]comparator, error) {
	stripped := stripBuild(part)
	if strings.Contains(stripped, "  ") || strings.HasPrefix(stripped, " ") || strings.HasSuffix(stripped, " ") {
		return nil, fmt.Errorf("build metadata in %q does not follow a version", part)
	}
	part, err := hyphen(stripped)
	if err != nil {
		return nil, err
	}
	var set []comparator
	for _, tok := range glue(strings.Split(part, " ")) {
		text, err := desugar(tok)
		if err != nil {
			return nil, err
		}
		for _, c := range strings.Split(text, " ") {
			if c == "" || c == ">=0.0.0" { // node-semver reads both as "*"
				continue
			}
			op, rest := cutOp(c)
			v, err := parseFull(strings.TrimPrefix(rest, "v"))
			if err != nil {
				return nil, fmt.Errorf("comparator %q: %w", c, err)
			}
			set = append(set, comparator{strings.TrimPrefix(op, "="), v})
		}
	}
	return set, nil
}

// hyphen rewrites "A - B" into the bounds node-semver gives it; other parts
// are returned as they are.
func hyphen(part string) (string, error) {
	a, b, _ := strings.Cut(part, " - ")
	from, okA := parseOperand(a)
	to, okB := parseOperand(b)
	if !okA || !okB {
		return part, nil
	}
	f, err := from.nums()
	if err != nil {
		return "", err
	}
	t, err := to.nums()
	if err != nil {
		return "", err
	}
	var lo, hi string
	switch len(f) {
	case 1:
		lo = fmt.Sprintf(">=%d.0.0", f[0])
	case 2:
		lo = fmt.Sprintf(">=%d.%d.0", f[0], f[1])
	case 3:
		lo = ">=" + a
	}
	switch {
	case len(t) == 1:
		hi = fmt.Sprintf("<%d.0.0-0", t[0]+1)
	case len(t) == 2:
		hi = fmt.Sprintf("<%d.%d.0-0", t[0], t[1]+1)
	case len(t) == 3 && to.pre != "":
		hi = fmt.Sprintf("<=%d.%d.%d-%s", t[0], t[1], t[2], to.pre)
	case len(t) == 3:
		hi = "<=" + b
	}
	return strings.Trim(lo+" "+hi, " "), nil
}

// glue joins a lone operator, "~", "~>" or "^" to the token after it, as
// node-semver's trimming does for "> 1.2.3", "~ 1.2", "^= 1" and "^ 1".
func glue(toks []string) []string {
	toks = glueIf(toks, func(t, next string) (string, bool) {
		if t == "~>" {
			return t, next == "=" // "~> = 1" is read as "~>= 1"
		}
		op, rest := cutOp(strings.TrimPrefix(strings.TrimPrefix(t, "~"), "^"))
		return t, op != "" && rest == "" && !strings.HasPrefix(t, "~^")
	})
	toks = glueIf(toks, func(t, _ string) (string, bool) { return "~", t == "~" || t == "~>" })
	return glueIf(toks, func(t, _ string) (string, bool) { return "^", t == "^" })
}

func glueIf(toks []string, lone func(t, next string) (string, bool)) []string {
	var out []string
	for i := 0; i < len(toks); i++ {
		if i+1 < len(toks) {
			if head, ok := lone(toks[i], toks[i+1]); ok {
				out = append(out, head+toks[i+1])
				i++
				continue
			}
		}
		out = append(out, toks[i])
	}
	return out
}

// desugar rewrites one token into space-separated plain comparators: carets,
// tildes and x-ranges become bounds, full versions stay as they are.
func desugar(tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	op, rest := "", tok
	switch tok[0] {
	case '^':
		rest = tok[1:]
	case '~':
		rest = strings.TrimPrefix(tok[1:], ">")
	default:
		op, rest = cutOp(tok)
	}
	x, ok := parseOperand(rest)
	if !ok {
		return "", fmt.Errorf("%q is not a version, range or comparator", tok)
	}
	n, err := x.nums()
	if err != nil {
		return "", err
	}
	switch {
	case tok[0] == '^':
		return caret(x, n), nil
	case tok[0] == '~':
		return tilde(x, n), nil
	case len(n) == 3:
		return tok, nil
	}
	for _, p := range x.parts[len(n):] {
		if !isX(p) { // node-semver 7.8 rejects "1.x.3" and "x.1"
			return "", fmt.Errorf("%q has a number after a wildcard", tok)
		}
	}
	return xrange(op, x, n), nil
}

// caret rewrites "^" + x: changes that keep the leftmost non-zero number.
func caret(x operand, n []uint64) string {
	switch {
	case len(n) < 2 || len(n) == 2 && n[0] == 0:
		return tilde(x, n)
	case len(n) == 2:
		return fmt.Sprintf(">=%d.%d.0 <%d.0.0-0", n[0], n[1], n[0]+1)
	}
	lo := fmt.Sprintf(">=%d.%d.%d%s", n[0], n[1], n[2], x.preSuffix())
	switch {
	case n[0] != 0:
		return fmt.Sprintf("%s <%d.0.0-0", lo, n[0]+1)
	case n[1] != 0:
		return fmt.Sprintf("%s <0.%d.0-0", lo, n[1]+1)
	}
	return fmt.Sprintf("%s <0.0.%d-0", lo, n[2]+1)
}

// tilde rewrites "~" + x: patch changes, or minor ones if only a major is given.
func tilde(x operand, n []uint64) string {
	switch len(n) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(">=%d.0.0 <%d.0.0-0", n[0], n[0]+1)
	case 2:
		return fmt.Sprintf(">=%d.%d.0 <%d.%d.0-0", n[0], n[1], n[0], n[1]+1)
	}
	return fmt.Sprintf(">=%d.%d.%d%s <%d.%d.0-0", n[0], n[1], n[2], x.preSuffix(), n[0], n[1]+1)
}

// xrange rewrites an operator and a partial version, such as ">1.2" or "1.x";
// n holds the numbers before the first wildcard, at most two.
func xrange(op string, x operand, n []uint64) string {
	op = strings.TrimPrefix(op, "=")
	switch {
	case len(n) == 0 && (op == "<" || op == ">"):
		return "<0.0.0-0"
	case len(n) == 0 || op == "":
		return tilde(x, n)
	}
	major, minor := n[0], uint64(0)
	if len(n) == 2 {
		minor = n[1]
	}
	if op == ">" || op == "<=" { // ">1.2" is ">=1.3.0", "<=1.2" is "<1.3.0-0"
		if len(n) == 1 {
			major++
		} else {
			minor++
		}
		op = map[string]string{">": ">=", "<=": "<"}[op]
	}
	suffix := ""
	if op == "<" {
		suffix = "-0"
	}
	return fmt.Sprintf("%s%d.%d.0%s", op, major, minor, suffix)
}

// Satisfies reports whether v is in r.
func (r Range) Satisfies(v Version) bool {
	if r.any {
		return len(v.Prerelease) == 0
	}
	for _, set := range r.sets {
		if satisfiesSet(set, v) {
			return true
		}
	}
	return false
}

// satisfiesSet reports whether v passes every comparator of set and, if v
// is a prerelease, whether some comparator has a prerelease on v's
// major.minor.patch.
func satisfiesSet(set []comparator, v Version) bool {
	for _, c := range set {
		if !c.holds(v) {
			return false
		}
	}
	if len(v.Prerelease) == 0 {
		return true
	}
	for _, c := range set {
		if len(c.v.Prerelease) > 0 && c.v.Major == v.Major && c.v.Minor == v.Minor && c.v.Patch == v.Patch {
			return true
		}
	}
	return false
}

// MaxSatisfying returns the highest of versions that r allows, skipping
// strings that are not versions; of equal versions the first wins.
func MaxSatisfying(versions []string, r Range) (string, bool) {
	best, bestV, found := "", Version{}, false
	for _, s := range versions {
		v, err := ParseVersion(s)
		if err != nil || !r.Satisfies(v) {
			continue
		}
		if !found || Compare(bestV, v) < 0 {
			best, bestV, found = s, v, true
		}
	}
	return best, found
}
