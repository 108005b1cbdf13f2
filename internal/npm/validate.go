package npm

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
)

var (
	nameRe    = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9_][a-z0-9._~-]*$`)
	newNameRe = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	versionRe = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	tagRe     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]{0,63}$`)
	specRe    = regexp.MustCompile(`^[0-9A-Za-z.*^~<>=| _+-]*$`)
	tokenRe   = regexp.MustCompile(`^!?[a-z0-9_]{1,32}$`)
	binNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._+-]{0,213}$`)
	binPathRe = regexp.MustCompile(`^[A-Za-z0-9@._/+ -]+$`)
	sriLen    = map[string]int{"sha1-": 20, "sha256-": 32, "sha384-": 48, "sha512-": 64}
)

// ValidName reports whether s is a valid npm package name (the registry's
// rules for new packages, and lower-case underscores of old ones).
func ValidName(s string) bool { return len(s) <= 214 && nameRe.MatchString(s) }

// ValidNewName reports whether s is a package name as the registry's rules
// for new packages have it: ValidName without the leading underscore of
// old ones. A lock's CLI package and the client's requests are held to it.
func ValidNewName(s string) bool { return len(s) <= 214 && newNameRe.MatchString(s) }

// ValidVersion reports whether s is an exact version as a lock writes it.
func ValidVersion(s string) bool { return len(s) <= 64 && versionRe.MatchString(s) }

// ValidIntegrity reports whether s is one Subresource Integrity hash of a
// kind npm checks, with a digest of the right length.
func ValidIntegrity(s string) bool {
	for prefix, n := range sriLen {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			b, err := base64.StdEncoding.Strict().DecodeString(rest)
			return err == nil && len(b) == n
		}
	}
	return false
}

// ValidSpec reports whether s may appear as a dependency's wanted version
// in a lock: a range, a tag, or an npm: alias of a registry package.
func ValidSpec(s string) bool {
	if len(s) > 256 {
		return false
	}
	if rest, ok := strings.CutPrefix(s, "npm:"); ok {
		name, rng := splitAlias(rest)
		return ValidName(name) && specRe.MatchString(rng)
	}
	return specRe.MatchString(s)
}

// ValidPlatformToken reports whether s is an os, cpu or libc entry ("linux",
// "!win32", "x64", "glibc").
func ValidPlatformToken(s string) bool { return tokenRe.MatchString(s) }

// ValidBin reports whether name and target are a safe executable entry.
func ValidBin(name, target string) bool {
	return binNameRe.MatchString(name) && !strings.Contains(name, "..") &&
		len(target) <= 1024 && binPathRe.MatchString(target) && !strings.HasPrefix(target, "/")
}

// splitAlias splits "name@range" (name may be scoped) at the version's @.
func splitAlias(s string) (name, rng string) {
	at := strings.LastIndex(s, "@")
	if at <= 0 {
		return s, ""
	}
	return s[:at], s[at+1:]
}

// shasumSRI turns a hex sha1 into its SRI form.
func shasumSRI(hexsum string) (string, bool) {
	b, err := hex.DecodeString(strings.TrimSpace(hexsum))
	if err != nil || len(b) != 20 {
		return "", false
	}
	return "sha1-" + base64.StdEncoding.EncodeToString(b), true
}
