// Package debian owns what agentbox knows about the Debian archive: dpkg's
// version order, the Packages index format, and the resolution of package
// names to exact versions (and a digest of their dependency closure) at a
// dated snapshot of the archive.
package debian

import (
	"strconv"
	"strings"
)

// maxNameLen bounds package names and versions, well above any in Debian.
const maxNameLen = 128

// CompareVersions orders two Debian versions as dpkg does: epochs
// numerically, then the upstream version, then the revision, each with
// dpkg's verrevcmp. It returns a negative number, zero or a positive number.
func CompareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if c := compareNumbers(ea, eb); c != 0 {
		return c
	}
	if c := verrevcmp(ua, ub); c != 0 {
		return c
	}
	return verrevcmp(ra, rb)
}

// splitVersion splits [epoch:]upstream[-revision]; a missing epoch is "0".
func splitVersion(v string) (epoch, upstream, revision string) {
	epoch = "0"
	if i := strings.IndexByte(v, ':'); i >= 0 {
		epoch, v = v[:i], v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

// compareNumbers compares two strings of decimal digits of any length.
func compareNumbers(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// order is dpkg's weight of a character outside a run of digits: '~' sorts
// before the end of the string, letters before everything else.
func order(c int) int {
	switch {
	case isDigit(c):
		return 0
	case isAlpha(c):
		return c
	case c == '~':
		return -1
	case c != 0:
		return c + 256
	}
	return 0
}

// verrevcmp is dpkg's comparison of an upstream version or a revision:
// alternating runs of non-digits (compared with order) and digits (compared
// numerically).
func verrevcmp(a, b string) int {
	at := func(s string, i int) int {
		if i < len(s) {
			return int(s[i])
		}
		return 0
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		for (i < len(a) && !isDigit(at(a, i))) || (j < len(b) && !isDigit(at(b, j))) {
			ac, bc := order(at(a, i)), order(at(b, j))
			if ac != bc {
				return ac - bc
			}
			i, j = i+1, j+1
		}
		for at(a, i) == '0' {
			i++
		}
		for at(b, j) == '0' {
			j++
		}
		firstDiff := 0
		for isDigit(at(a, i)) && isDigit(at(b, j)) {
			if firstDiff == 0 {
				firstDiff = at(a, i) - at(b, j)
			}
			i, j = i+1, j+1
		}
		if isDigit(at(a, i)) {
			return 1
		}
		if isDigit(at(b, j)) {
			return -1
		}
		if firstDiff != 0 {
			return firstDiff
		}
	}
	return 0
}

func isDigit(c int) bool { return c >= '0' && c <= '9' }
func isAlpha(c int) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// ValidVersion reports whether s is a version as Debian policy 5.6.12
// describes it: an optional numeric epoch, an upstream version that starts
// with a digit and holds alphanumerics and ". + ~" (and "-" when there is a
// revision), and an optional non-empty revision of alphanumerics and
// ". + ~". Colons in the upstream version, which policy no longer allows,
// are rejected; so is anything over 128 bytes.
func ValidVersion(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	epoch, upstream, revision := "0", s, ""
	if i := strings.IndexByte(s, ':'); i >= 0 {
		epoch, upstream = s[:i], s[i+1:]
		if _, err := strconv.ParseUint(epoch, 10, 31); err != nil {
			return false
		}
	}
	hasRevision := false
	if i := strings.LastIndexByte(upstream, '-'); i >= 0 {
		upstream, revision, hasRevision = upstream[:i], upstream[i+1:], true
	}
	if upstream == "" || !isDigit(int(upstream[0])) {
		return false
	}
	if hasRevision && revision == "" {
		return false
	}
	return allIn(upstream, ".+~-") && allIn(revision, ".+~")
}

// allIn reports whether s holds only ASCII alphanumerics and bytes of extra.
func allIn(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		c := int(s[i])
		if !isDigit(c) && !isAlpha(c) && strings.IndexByte(extra, s[i]) < 0 {
			return false
		}
	}
	return true
}

// ValidPackageName reports whether s is a binary package name as Debian
// policy 5.6.1 allows: [a-z0-9][a-z0-9+.-]+, at most 128 bytes.
func ValidPackageName(s string) bool {
	if len(s) < 2 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		lowerOrDigit := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		if !lowerOrDigit && (i == 0 || strings.IndexByte("+.-", c) < 0) {
			return false
		}
	}
	return true
}
