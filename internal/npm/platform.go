package npm

import "strings"

// Platform is where a tree is installed: npm's names for the operating
// system, the CPUs (a package fits when it fits one of them) and the C
// library. The zero Platform fits every package.
type Platform struct {
	OS   string   // "linux"; "" = any
	CPU  []string // "x64", "arm64"; empty = any
	Libc string   // "glibc" or "musl", checked on linux only, as npm does; "" = any
}

// ImagePlatform is every agent image's: Linux on the architectures whose
// Debian packages the lock pins (amd64 and arm64, in npm's names), on a
// Debian base, so glibc.
var ImagePlatform = Platform{OS: "linux", CPU: []string{"x64", "arm64"}, Libc: "glibc"}

// Fits reports whether npm would install the version on the platform: its
// os, cpu and libc lists (an entry "!x" excludes x; a list of exclusions
// alone admits everything else; "any" admits everything) admit it.
func (p Platform) Fits(m *Manifest) bool {
	if p.OS != "" && !admits(m.OS, p.OS) {
		return false
	}
	if len(p.CPU) > 0 {
		fits := false
		for _, c := range p.CPU {
			fits = fits || admits(m.CPU, c)
		}
		if !fits {
			return false
		}
	}
	return p.Libc == "" || p.OS != "linux" || admits(m.Libc, p.Libc)
}

// admits is npm-install-checks' checkList: whether a package's list admits
// value.
func admits(list []string, value string) bool {
	if len(list) == 0 || len(list) == 1 && list[0] == "any" {
		return true
	}
	negated, match := 0, false
	for _, e := range list {
		if test, ok := strings.CutPrefix(e, "!"); ok {
			negated++
			if test == value {
				return false
			}
			continue
		}
		match = match || e == value
	}
	return match || negated == len(list)
}
