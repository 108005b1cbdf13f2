// Package validate holds the checks that every user-written value passes
// before it may reach a Dockerfile, shell script, compose file, nftables
// ruleset or dnsmasq configuration. Each returns a lowercase error that says
// what is wrong with the value, for the caller to position.
package validate

import (
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The grammars, unanchored: the validators below and the JSON Schema
// (generator/schema.go) are both built from them.
const (
	DebianPackageGrammar = `[a-z0-9][a-z0-9+.-]+`
	DebianVersionGrammar = `[0-9][A-Za-z0-9.+~:-]*`
	EnvNameGrammar       = `[A-Za-z_][A-Za-z0-9_]*`
	ExtensionGrammar     = `[A-Za-z0-9][A-Za-z0-9-]*\.[A-Za-z0-9][A-Za-z0-9-]*`
	ProjectNameGrammar   = `[a-z0-9][a-z0-9_-]*`
	PathSegmentGrammar   = `[A-Za-z0-9._@+-]+`
	GlobSegmentGrammar   = `[A-Za-z0-9._@+*?\[\]!^-]+`
)

func anchored(grammar string) *regexp.Regexp { return regexp.MustCompile("^" + grammar + "$") }

var (
	labelRe   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	debPkgRe  = anchored(DebianPackageGrammar)
	debVerRe  = anchored(DebianVersionGrammar)
	envNameRe = anchored(EnvNameGrammar)
	extRe     = anchored(ExtensionGrammar)
	projectRe = anchored(ProjectNameGrammar)
	memoryRe  = regexp.MustCompile(`^([0-9]+)([kmg])b?$`)
	segmentRe = anchored(PathSegmentGrammar)
)

// Domain checks a domain name, optionally written "*.name", and returns it
// lower-cased without the wildcard or a trailing dot.
func Domain(s string) (name string, wildcard bool, err error) {
	bad := func(why string) (string, bool, error) {
		return "", false, fmt.Errorf("invalid domain %+q: %s", s, why)
	}
	// The raw bytes first: strings.ToLower folds some non-ASCII letters into
	// ASCII (U+212A KELVIN SIGN to k, U+0130 to i).
	if r, ok := firstNonASCII(s); ok {
		return bad(fmt.Sprintf("character %U is not allowed (letters, digits, '-' and '.' only; write internationalized names in punycode)", r))
	}
	name = LowerASCII(strings.TrimSuffix(s, "."))
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		name, wildcard = rest, true
	}
	switch {
	case name == "":
		return bad("empty name")
	case strings.ContainsAny(name, "*"):
		return bad(`a wildcard may only be the whole first label, as in "*.example.com"`)
	case len(name) > 253:
		return bad("longer than 253 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return bad(fmt.Sprintf("character %q is not allowed (letters, digits, '-' and '.' only; write internationalized names in punycode)", r))
		}
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return bad("a domain needs at least two labels (a single label would admit a whole top-level domain)")
	}
	for _, l := range labels {
		switch {
		case l == "":
			return bad("empty label")
		case len(l) > 63:
			return bad(fmt.Sprintf("label %q is longer than 63 characters", l))
		case !labelRe.MatchString(l):
			return bad(fmt.Sprintf("label %q must start and end with a letter or digit", l))
		}
	}
	if _, err := strconv.Atoi(labels[len(labels)-1]); err == nil {
		return bad("looks like an IP address; list addresses under network.cidrs")
	}
	return name, wildcard, nil
}

// Port checks a TCP port number.
func Port(p int) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("invalid port %d: must be 1-65535", p)
	}
	return nil
}

// CIDR parses an IPv4 or IPv6 prefix (a bare address is a /32 or /128).
func CIDR(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, fmt.Errorf("invalid CIDR %+q", s)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, fmt.Errorf("invalid CIDR %+q", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	switch {
	case p.Addr().Is4In6():
		return p, fmt.Errorf("invalid CIDR %+q: write IPv4-mapped addresses as IPv4", s)
	case p.Masked() != p:
		return p, fmt.Errorf("invalid CIDR %+q: host bits are set; did you mean %q?", s, p.Masked().String())
	case p.Bits() == 0:
		return p, fmt.Errorf("CIDR %+q admits every address, which would turn the firewall off", s)
	}
	return p, nil
}

// DebianPackage checks "name" or "name=version".
func DebianPackage(s string) error {
	name, version, pinned := strings.Cut(s, "=")
	if !debPkgRe.MatchString(name) || len(s) > 200 {
		return fmt.Errorf("invalid Debian package name %+q: lower-case letters, digits, '+', '-' and '.', at least two characters", s)
	}
	if pinned && !debVerRe.MatchString(version) {
		return fmt.Errorf("invalid Debian package version in %+q", s)
	}
	return nil
}

// EnvName checks an environment variable name.
func EnvName(s string) error {
	if !envNameRe.MatchString(s) {
		return fmt.Errorf("invalid environment variable name %+q: letters, digits and '_', not starting with a digit", s)
	}
	return nil
}

// EnvValue checks an environment variable value.
func EnvValue(s string) error {
	if strings.ContainsRune(s, 0) {
		return fmt.Errorf("an environment value cannot contain a NUL byte")
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("an environment value must be valid UTF-8")
	}
	return nil
}

// Extension checks a VS Code extension id, publisher.name.
func Extension(s string) error {
	if !extRe.MatchString(s) || len(s) > 200 {
		return fmt.Errorf("invalid VS Code extension id %+q: want publisher.name", s)
	}
	return nil
}

// TaskSeparator joins a sandbox's name and a task's into the task's
// compose project: NAME-task-TASK. A sandbox's name neither holds it nor
// ends with its first part (NAME-task), so that no task's project is a
// sandbox's, nor another sandbox's task's.
const TaskSeparator = "-task-"

// TaskSeparatorGrammar matches the names that TaskSeparator makes
// ambiguous.
const TaskSeparatorGrammar = "-task(-|$)"

var taskSepRe = regexp.MustCompile(TaskSeparatorGrammar)

// ProjectName checks a sandbox's name: a compose project name that is not
// one of a task's.
func ProjectName(s string) error {
	if !projectRe.MatchString(s) || len(s) > 63 {
		return fmt.Errorf("invalid name %+q: lower-case letters, digits, '-' and '_', starting with a letter or digit, at most 63 characters", s)
	}
	if taskSepRe.MatchString(s) {
		return fmt.Errorf("invalid name %+q: a name may not hold %q or end with %q: agentbox names the compose project of a sandbox's task NAME%sTASK", s, TaskSeparator, strings.TrimSuffix(TaskSeparator, "-"), TaskSeparator)
	}
	return nil
}

// SanitizeProjectName turns a directory name into a valid project name.
func SanitizeProjectName(dir string) string {
	var b strings.Builder
	dash := false
	for _, r := range LowerASCII(dir) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-_")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-_")
	}
	// NAME-task-TASK is a task's: "-task-" and a final "-task" become
	// "_task-" and "_task".
	for taskSepRe.MatchString(s) {
		s = taskSepRe.ReplaceAllStringFunc(s, func(m string) string { return "_" + m[1:] })
	}
	if s == "" {
		return "agentbox"
	}
	return s
}

// Memory checks a memory size such as "4g" and returns it lower-cased.
func Memory(s string) (string, error) {
	var m []string
	if _, nonASCII := firstNonASCII(s); !nonASCII {
		m = memoryRe.FindStringSubmatch(LowerASCII(s))
	}
	if m == nil {
		return "", fmt.Errorf("invalid memory size %+q: want a number and a unit, such as 512m or 4g", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	scale := map[string]int64{"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m[2]]
	if err != nil || n > (1<<50)/scale {
		return "", fmt.Errorf("memory size %+q is too large", s)
	}
	if n*scale < 6<<20 {
		return "", fmt.Errorf("memory size %+q is below Docker's minimum of 6m", s)
	}
	return m[1] + m[2], nil
}

var reservedDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/root", "/run", "/sbin", "/sys", "/usr", "/var"}

// Linux's limits on a path and on one of its names.
const (
	maxPath = 4095 // PATH_MAX without the terminating NUL
	maxName = 255  // NAME_MAX
)

// tooLong says what is wrong when path s (or a pattern) or one of its
// slash-separated names is longer than Linux allows, or "".
func tooLong(s string) string {
	if len(s) > maxPath {
		return fmt.Sprintf("longer than %d bytes", maxPath)
	}
	for _, seg := range strings.Split(s, "/") {
		if len(seg) > maxName {
			return fmt.Sprintf("a name is longer than %d bytes", maxName)
		}
	}
	return ""
}

// ContainerPath checks an absolute directory in the agent container where
// the project may be mounted.
func ContainerPath(s string) error {
	if !strings.HasPrefix(s, "/") || path.Clean(s) != s || s == "/" {
		return fmt.Errorf("invalid path %+q: want a clean absolute path such as /workspace", s)
	}
	if why := tooLong(s); why != "" {
		return fmt.Errorf("invalid path %+q: %s", s, why)
	}
	for _, seg := range strings.Split(s[1:], "/") {
		if !segmentRe.MatchString(seg) {
			return fmt.Errorf("invalid path %+q: letters, digits and . _ @ + - only", s)
		}
	}
	for _, r := range reservedDirs {
		if s == r || strings.HasPrefix(s, r+"/") {
			return fmt.Errorf("path %+q is inside the system directory %s", s, r)
		}
	}
	if s == "/home" || s == "/home/agent" || s == "/tmp" {
		return fmt.Errorf("path %+q is a system directory", s)
	}
	return nil
}

// RelPath checks a path relative to the project directory, inside it.
func RelPath(s string) error {
	if s == "" || strings.HasPrefix(s, "/") || path.Clean(s) != s || s == "." {
		return fmt.Errorf("invalid path %+q: want a clean path relative to the project, such as docs/adr", s)
	}
	if why := tooLong(s); why != "" {
		return fmt.Errorf("invalid path %+q: %s", s, why)
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." {
			return fmt.Errorf("invalid path %+q: it leaves the project", s)
		}
		if !segmentRe.MatchString(seg) {
			return fmt.Errorf("invalid path %+q: letters, digits and . _ @ + - only", s)
		}
	}
	return nil
}

// PathPattern checks a glob of workspace.hidden: a path relative to the
// project whose segments may hold the wildcards * ? and [...] of path.Match.
func PathPattern(s string) error {
	if s == "" || strings.HasPrefix(s, "/") || path.Clean(s) != s || s == "." {
		return fmt.Errorf("invalid pattern %q: want a clean path or glob relative to the project, such as .env.*", s)
	}
	if why := tooLong(s); why != "" {
		return fmt.Errorf("invalid pattern %q: %s", s, why)
	}
	if _, err := path.Match(s, ""); err != nil {
		return fmt.Errorf("invalid pattern %q: %v", s, err)
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." {
			return fmt.Errorf("invalid pattern %q: it leaves the project", s)
		}
		if !patternSegmentRe.MatchString(seg) {
			return fmt.Errorf("invalid pattern %q: letters, digits, . _ @ + - and the wildcards * ? [ ] only (and a leading ! in workspace.hidden)", s)
		}
	}
	return nil
}

var patternSegmentRe = anchored(GlobSegmentGrammar)

// LowerASCII lower-cases the ASCII letters of s and leaves every other byte
// as it is. Unlike strings.ToLower it never turns a non-ASCII character into
// an ASCII one (U+212A KELVIN SIGN into k), so a check of the raw bytes
// still holds for the result.
func LowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// firstNonASCII returns the first character of s that is not ASCII (an
// invalid byte as utf8.RuneError).
func firstNonASCII(s string) (rune, bool) {
	for _, r := range s {
		if r >= utf8.RuneSelf {
			return r, true
		}
	}
	return 0, false
}
