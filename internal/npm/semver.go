// Package npm matches versions against npm version ranges exactly as npm's
// own semver package does (strict mode, includePrerelease off), so that a
// lockfile resolved in Go is one `npm ci` accepts.
//
// Ranges are read the way node-semver reads them: carets, tildes, x-ranges and
// hyphen ranges are rewritten into plain comparators (">=1.2.3 <2.0.0-0"), and
// a prerelease version only satisfies a comparator set if one of the set's
// comparators carries a prerelease on the same major.minor.patch.
//
// The reference is node-semver 7.8 (npm 11), which also rejects "1.x.3". A
// few inputs it accepts only through accidents of its regular expressions are
// rejected here: a "*" glued to a version ("1.2.3*", ">*1.2.3") and build
// metadata standing apart from its version ("1.2.3 +build"). Ranges, like
// versions, are limited to 256 bytes. TestAgainstNodeSemver compares this
// package with a node-semver on the machine.
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
	if len(x) == 0 || len(y) == 0 {
		return cmp.Compare(len(y), len(x)) // a release sorts after its prereleases
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
