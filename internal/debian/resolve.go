package debian

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/ulikunitz/xz"
)

var (
	releaseRE = regexp.MustCompile(`^[a-z]+$`)
	archRE    = regexp.MustCompile(`^[a-z0-9]+$`)
)

// Resolution is what one release and architecture of a snapshot make of a
// list of package names.
type Resolution struct {
	// Versions holds the version of each named package: the one pinned by
	// "name=version", else the candidate (the highest across the suites).
	Versions map[string]string
	// Closure is "sha256:" and the hex SHA-256 of the sorted lines
	// "name=version\n" of the named packages and their dependency closure:
	// Depends and Pre-Depends, every alternative, version constraints and
	// architecture qualifiers ignored, a virtual package standing for all of
	// its providers, each package at its candidate version (a named one at
	// its pinned version). Dependencies that nothing in the archive
	// satisfies are left out.
	Closure string
	// ClosureSize is the number of packages in the closure.
	ClosureSize int
}

// Resolve downloads the main Packages index of arch (which holds the
// "all" packages too) for the release's suites in snap (release,
// release-updates, and release-security; sid and unstable have only the
// first) and resolves names, each "name" or "name=version", the version
// then required to exist. A suite missing from the archive is an error.
// Every unknown name and version is reported, in one error.
func (a *Archive) Resolve(ctx context.Context, snap Snapshot, release, arch string, names []string) (Resolution, error) {
	for _, ts := range []string{snap.Debian, snap.Security} {
		if !timestampRE.MatchString(ts) {
			return Resolution{}, fmt.Errorf("invalid snapshot timestamp %q, want YYYYMMDDTHHMMSSZ", ts)
		}
	}
	if a.Layout == LayoutPlain && (a.Base == "" || a.Security == "") {
		return Resolution{}, errors.New("a plain mirror needs the URLs of both the archive and its security archive")
	}
	if !releaseRE.MatchString(release) {
		return Resolution{}, fmt.Errorf("invalid release %q", release)
	}
	if !archRE.MatchString(arch) {
		return Resolution{}, fmt.Errorf("invalid architecture %q", arch)
	}
	reqs, errs := parseNames(names)
	idx, err := a.index(ctx, snap, release, arch)
	if err != nil {
		return Resolution{}, err
	}
	where := fmt.Sprintf("Debian %s (%s)", release, arch)
	roots, chooseErrs := idx.choose(reqs, where, snap.Debian)
	if err := errors.Join(append(errs, chooseErrs...)...); err != nil {
		return Resolution{}, err
	}
	lines, err := idx.closure(roots)
	if err != nil {
		return Resolution{}, fmt.Errorf("%s at snapshot %s: %w", where, snap.Debian, err)
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	res := Resolution{Versions: map[string]string{}, Closure: "sha256:" + hex.EncodeToString(sum[:]), ClosureSize: len(lines)}
	for name, p := range roots {
		res.Versions[name] = p.Version
	}
	return res, nil
}

// request is one parsed name of Resolve; version is "" if not pinned.
type request struct{ name, version string }

func parseNames(names []string) ([]request, []error) {
	var reqs []request
	var errs []error
	seen := map[string]bool{}
	for _, s := range names {
		name, version, pinned := strings.Cut(s, "=")
		switch {
		case !ValidPackageName(name):
			errs = append(errs, fmt.Errorf("invalid package name %q", name))
		case pinned && !ValidVersion(version):
			errs = append(errs, fmt.Errorf("invalid version %q in %q", version, s))
		case seen[name]:
			errs = append(errs, fmt.Errorf("package %q is named twice", name))
		default:
			seen[name] = true
			reqs = append(reqs, request{name, version})
		}
	}
	return reqs, errs
}

// suite is one suite of a release in one archive's state.
type suite struct{ archive, ts, name string }

func suites(snap Snapshot, release string) []suite {
	if release == "sid" || release == "unstable" {
		return []suite{{"debian", snap.Debian, release}}
	}
	return []suite{
		{"debian", snap.Debian, release},
		{"debian", snap.Debian, release + "-updates"},
		{"debian-security", snap.Security, release + "-security"},
	}
}

// index fetches the release's suites concurrently.
func (a *Archive) index(ctx context.Context, snap Snapshot, release, arch string) (*index, error) {
	ss := suites(snap, release)
	lists := make([][]Package, len(ss))
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() { lists[i], errs[i] = a.packages(ctx, s, arch) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return newIndex(arch, lists)
}

// packages fetches and parses one suite's Packages index.
func (a *Archive) packages(ctx context.Context, s suite, arch string) ([]Package, error) {
	limit := a.MaxIndexSize
	if limit <= 0 {
		limit = DefaultMaxIndexSize
	}
	// Debian's -updates and -security suites publish Packages.xz only;
	// a copy of the archive may have Packages.gz only.
	var url string
	var resp *response
	var err error
	for _, ext := range []string{"xz", "gz"} {
		url = a.url(s.archive, s.ts, "dists/"+s.name+"/main/binary-"+arch+"/Packages."+ext)
		if resp, err = a.get(ctx, url, true, limit); err != nil {
			return nil, err
		}
		if resp.status != http.StatusNotFound {
			break
		}
	}
	switch resp.status {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("suite %s (%s) is not in the archive: GET %s (and Packages.xz): %s", s.name, arch, url, resp.statusText)
	default:
		return nil, fmt.Errorf("GET %s: %s", url, resp.statusText)
	}
	zr, err := decompress(url, resp.body)
	if err != nil {
		return nil, fmt.Errorf("decompressing %s: %w", url, err)
	}
	pkgs, err := ParsePackages(zr, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return pkgs, nil
}

// decompress opens an index by its extension.
func decompress(url string, body []byte) (io.Reader, error) {
	if strings.HasSuffix(url, ".xz") {
		return xz.NewReader(bytes.NewReader(body))
	}
	return gzip.NewReader(bytes.NewReader(body))
}
