// Package npm matches versions against npm version ranges exactly as npm's
// own semver package does (strict mode, includePrerelease off), so that a
// lockfile resolved in Go is one `npm ci` accepts.
//
// Ranges are read the way node-semver reads them: carets, tildes, x-ranges and
// hyphen ranges are rewritten into plain comparators (">=1.2.3 <2.0.0-0"), and
// a prerelease version only satisfies a comparator set if one of the set's
// comparators carries a prerelease on the same major.minor.patch.
//
// A few inputs node-semver accepts only through accidents of its regular
// expressions are rejected here: a "*" glued to a version ("1.2.3*",
// ">*1.2.3"), and build metadata standing apart from its version
// ("1.2.3 +build").
package npm

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxLen is node-semver's MAX_LENGTH; here it bounds ranges as well as versions.
const maxLen = 256

// maxSafe is JavaScript's Number.MAX_SAFE_INTEGER, node-semver's limit on numbers.
const maxSafe = 1<<53 - 1

// Version is a semantic version as node-semver parses it in strict mode.
type Version struct {
	Major, Minor, Patch uint64
	Prerelease          []string
	Build               []string
}

// ParseVersion parses a strict semver 2.0 version. Like node-semver it
// ignores surrounding whitespace and one leading "v"; "=1.2.3" is not a
// version (it is a range).
func ParseVersion(s string) (Version, error) {
	if len(s) > maxLen {
		return Version{}, fmt.Errorf("invalid npm version %q: longer than %d bytes", s, maxLen)
	}
	v, err := parseFull(strings.TrimPrefix(strings.TrimFunc(s, isJSSpace), "v"))
	if err != nil {
		return Version{}, fmt.Errorf("invalid npm version %q: %w", s, err)
	}
	return v, nil
}

// String formats v as MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD].
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Prerelease) > 0 {
		s += "-" + strings.Join(v.Prerelease, ".")
	}
	if len(v.Build) > 0 {
		s += "+" + strings.Join(v.Build, ".")
	}
	return s
}

// Compare orders a and b by semver precedence and returns -1, 0 or 1. Build
// metadata is ignored; a version sorts after its own prereleases.
func Compare(a, b Version) int {
	if c := cmp.Or(cmp.Compare(a.Major, b.Major), cmp.Compare(a.Minor, b.Minor), cmp.Compare(a.Patch, b.Patch)); c != 0 {
		return c
	}
	x, y := a.Prerelease, b.Prerelease
	switch {
	case len(x) == 0 || len(y) == 0:
		return cmp.Compare(len(y), len(x))
	}
	for i := 0; ; i++ {
		switch {
		case i == len(x) || i == len(y):
			return cmp.Compare(len(x), len(y))
		case x[i] != y[i]:
			return compareID(x[i], y[i])
		}
	}
}

// compareID compares prerelease identifiers as node-semver does: all-digit
// ones as JavaScript numbers and below the others, the rest as strings.
func compareID(a, b string) int {
	an, bn := isDigits(a), isDigits(b)
	switch {
	case an && bn:
		x, _ := strconv.ParseFloat(a, 64)
		y, _ := strconv.ParseFloat(b, 64)
		return cmp.Compare(x, y)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

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
	if op == ">" || op == "<=" {
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
		d := Compare(v, c.v)
		ok := map[string]bool{"": d == 0, "<": d < 0, "<=": d <= 0, ">": d > 0, ">=": d >= 0}[c.op]
		if !ok {
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

// operand is a version as ranges write it: a prefix of "v", "=" and spaces,
// one to three parts that are numbers or the wildcards x, X and *, and after
// three parts an optional prerelease and build.
type operand struct {
	prefix     string
	parts      []string
	pre, build string
}

// parseOperand reads s as an operand; it reports false unless all of s is one.
func parseOperand(s string) (operand, bool) {
	var x operand
	i := 0
	for i < len(s) && strings.IndexByte("v= ", s[i]) >= 0 {
		i++
	}
	x.prefix, s = s[:i], s[i:]
	for {
		p := part(s)
		if p == "" {
			return x, false
		}
		x.parts, s = append(x.parts, p), s[len(p):]
		if len(x.parts) == 3 || !strings.HasPrefix(s, ".") {
			break
		}
		s = s[1:]
	}
	if len(x.parts) == 3 {
		var ok bool
		if x.pre, s, ok = idents(s, '-'); !ok {
			return x, false
		}
		if x.build, s, ok = idents(s, '+'); !ok {
			return x, false
		}
	}
	return x, s == ""
}

// part returns the number or wildcard that s starts with, or "".
func part(s string) string {
	switch {
	case s == "":
		return ""
	case strings.IndexByte("xX*0", s[0]) >= 0:
		return s[:1]
	}
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return s[:n]
}

// idents reads an optional list of dot-separated identifiers led by sep. A
// prerelease identifier of digits must not start with 0.
func idents(s string, sep byte) (list, rest string, ok bool) {
	if s == "" || s[0] != sep {
		return "", s, true
	}
	n := 1
	for n < len(s) && (isIDChar(s[n]) || s[n] == '.') {
		n++
	}
	list = s[1:n]
	for _, id := range strings.Split(list, ".") {
		if id == "" || sep == '-' && len(id) > 1 && id[0] == '0' && isDigits(id) {
			return "", s, false
		}
	}
	return list, s[n:], true
}

// nums returns the numbers before the first wildcard.
func (x operand) nums() ([]uint64, error) {
	var n []uint64
	for _, p := range x.parts {
		if isX(p) {
			break
		}
		v, err := strconv.ParseUint(p, 10, 64)
		if err != nil || v > maxSafe {
			return nil, fmt.Errorf("%s is above node-semver's limit of 2^53-1", p)
		}
		n = append(n, v)
	}
	return n, nil
}

func (x operand) preSuffix() string {
	if x.pre == "" {
		return ""
	}
	return "-" + x.pre
}

// parseFull parses MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] with no prefix.
func parseFull(s string) (Version, error) {
	x, ok := parseOperand(s)
	n, err := x.nums()
	switch {
	case !ok || x.prefix != "" || len(x.parts) != 3:
		return Version{}, errors.New("not MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]")
	case err != nil:
		return Version{}, err
	case len(n) != 3:
		return Version{}, errors.New("a version has no wildcards")
	}
	v := Version{Major: n[0], Minor: n[1], Patch: n[2]}
	if x.pre != "" {
		v.Prerelease = strings.Split(x.pre, ".")
	}
	if x.build != "" {
		v.Build = strings.Split(x.build, ".")
	}
	return v, nil
}

// cutOp splits a leading "<", ">", "<=", ">=" or "=" off s.
func cutOp(s string) (op, rest string) {
	n := 0
	if n < len(s) && (s[n] == '<' || s[n] == '>') {
		n++
	}
	if n < len(s) && s[n] == '=' {
		n++
	}
	return s[:n], s[n:]
}

// stripBuild deletes every "+build.meta" run, as node-semver does first
// thing when it reads a range.
func stripBuild(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '+' || i+1 == len(s) || !isIDChar(s[i+1]) {
			b.WriteByte(s[i])
			continue
		}
		for i+1 < len(s) && (isIDChar(s[i+1]) || s[i+1] == '.' && i+2 < len(s) && isIDChar(s[i+2])) {
			i++
		}
	}
	return b.String()
}

func isX(p string) bool   { return p == "x" || p == "X" || p == "*" }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isIDChar(c byte) bool {
	return isDigit(c) || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
func isDigits(s string) bool { return s != "" && strings.TrimLeft(s, "0123456789") == "" }

// isJSSpace reports whether JavaScript's \s and trim() treat r as whitespace.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return 0x2000 <= r && r <= 0x200a
}
