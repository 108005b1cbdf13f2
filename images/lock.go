package images

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// LockFile is the name of the lock file beside agentbox.yaml.
const LockFile = "agentbox.lock"

// Lock pins every image reference to a digest and every agent CLI to a
// version. `agentbox bump` writes it; `agentbox generate` only reads it.
type Lock struct {
	Images map[string]string // "repo:tag" as written -> "sha256:..."
	NPM    map[string]string // npm package -> exact version
	keys   map[string]string // Ref.Key() -> digest
}

type lockFile struct {
	Version *int              `yaml:"version"`
	Images  map[string]string `yaml:"images"`
	NPM     map[string]string `yaml:"npm"`
}

var (
	npmNameRe    = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	npmVersionRe = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
)

// ValidNPMName reports whether s is a valid npm package name.
func ValidNPMName(s string) bool { return len(s) <= 214 && npmNameRe.MatchString(s) }

// ValidNPMVersion reports whether s is an exact semantic version.
func ValidNPMVersion(s string) bool { return len(s) <= 64 && npmVersionRe.MatchString(s) }

// ParseLock parses and validates a lock file; errors carry file:line:col.
func ParseLock(file string, data []byte) (*Lock, error) {
	var w lockFile
	pos, err := yamlpos.Decode(file, data, &w)
	if err != nil {
		return nil, err
	}
	errs := &yamlpos.Errors{File: file}
	if w.Version == nil {
		errs.Add(yamlpos.Pos{Line: 1, Col: 1}, "", "missing key \"version\" (want version: 1)")
	} else if *w.Version != 1 {
		errs.Add(pos["version"], "version", "unsupported lock version %d (this agentbox reads version 1)", *w.Version)
	}
	l := &Lock{Images: map[string]string{}, NPM: map[string]string{}, keys: map[string]string{}}
	seen := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(w.Images)) {
		path := yamlpos.Join("images", k)
		r, err := ParseRef(k)
		switch {
		case err != nil:
			errs.Add(pos[path], path, "%v", err)
		case r.Pinned():
			errs.Add(pos[path], path, "a lock key is repo:tag without a digest")
		case !ValidDigest(w.Images[k]):
			errs.Add(pos[path], path, "invalid digest %q: want sha256:<64 lowercase hex>", w.Images[k])
		case seen[r.Key()] != "":
			errs.Add(pos[path], path, "the same image as %q", seen[r.Key()])
		default:
			seen[r.Key()] = k
			l.Images[k] = w.Images[k]
			l.keys[r.Key()] = w.Images[k]
		}
	}
	for _, k := range slices.Sorted(maps.Keys(w.NPM)) {
		path := yamlpos.Join("npm", k)
		switch v := w.NPM[k]; {
		case !ValidNPMName(k):
			errs.Add(pos[path], path, "invalid npm package name %q", k)
		case !ValidNPMVersion(v):
			errs.Add(pos[path], path, "invalid version %q: want an exact version such as 1.2.3", v)
		default:
			l.NPM[k] = v
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return l, nil
}

// Digest returns the pinned digest of r's repo:tag.
func (l *Lock) Digest(r Ref) (string, bool) {
	if l == nil {
		return "", false
	}
	if l.keys == nil {
		l.keys = map[string]string{}
		for k, d := range l.Images {
			if r, err := ParseRef(k); err == nil {
				l.keys[r.Key()] = d
			}
		}
	}
	d, ok := l.keys[r.Key()]
	return d, ok
}

// Version returns the pinned version of an npm package.
func (l *Lock) Version(pkg string) (string, bool) {
	if l == nil {
		return "", false
	}
	v, ok := l.NPM[pkg]
	return v, ok
}

// Marshal renders the lock deterministically.
func (l *Lock) Marshal() []byte {
	var b strings.Builder
	b.WriteString("# agentbox.lock: the image digests and agent CLI versions that agentbox generates from.\n")
	b.WriteString("# Written by `agentbox bump`; `agentbox generate` only reads it and never resolves anything.\n")
	b.WriteString("version: 1\n")
	writeMap := func(name string, m map[string]string) {
		if len(m) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:\n", name)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, "  %s: %s\n", strconv.Quote(k), strconv.Quote(m[k]))
		}
	}
	writeMap("images", l.Images)
	writeMap("npm", l.NPM)
	return []byte(b.String())
}
