package images

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// mirror is a mirror of Docker Hub: a registry that serves Hub's
// repositories under their own names (library/debian), as Docker's
// registry-mirrors do.
type mirror struct {
	host     string // host[:port]
	insecure bool   // http://: plain HTTP, as Docker speaks to an http:// mirror
}

// ParseMirror reads a registry mirror's URL as Docker's daemon.json takes
// it: http:// or https://, a host and an optional port, no path (but "/"),
// query or fragment.
func ParseMirror(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("registry mirror %q is not an http:// or https:// URL", s)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("registry mirror %q has more than scheme://host[:port]: a mirror serves Docker Hub's repositories at its root, as Docker takes it", s)
	}
	return u.Scheme + "://" + u.Host, nil
}

// parseMirrors reads the mirrors of RegistryOptions.
func parseMirrors(list []string) ([]mirror, error) {
	var out []mirror
	for _, s := range list {
		m, err := ParseMirror(s)
		if err != nil {
			return nil, err
		}
		scheme, host, _ := strings.Cut(m, "://")
		out = append(out, mirror{host: host, insecure: scheme == "http"})
	}
	return out, nil
}

// onHub reports whether ref names a repository on Docker Hub.
func onHub(ref name.Reference) bool {
	return ref.Context().RegistryStr() == name.DefaultRegistry
}

// at returns ref on the mirror m: the same repository (library/debian)
// and tag or digest, on the mirror's host.
func (m mirror) at(ref name.Reference) (name.Reference, error) {
	opts := []name.Option{name.WeakValidation}
	if m.insecure {
		opts = append(opts, name.Insecure)
	}
	repo := m.host + "/" + ref.Context().RepositoryStr()
	if d, ok := ref.(name.Digest); ok {
		return name.NewDigest(repo+"@"+d.DigestStr(), opts...)
	}
	return name.NewTag(repo+":"+ref.Identifier(), opts...)
}

// viaMirrors runs try on ref at each mirror in order, then on ref itself,
// and returns the first success, as Docker's daemon pulls from Docker Hub:
// any failure at a mirror falls back to the next one, and finally to Hub.
// A reference outside Docker Hub goes to its registry alone. Each attempt
// gets its own timeout. On failure it returns Hub's error and, when
// mirrors were tried, a note of what each answered (describe words it).
func (r *RegistryResolver) viaMirrors(ctx context.Context, ref name.Reference, timeout time.Duration,
	try func(context.Context, name.Reference) error, describe func(name.Reference, error) string) (err error, note string) {
	attempt := func(ref name.Reference) error {
		actx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return try(actx, ref)
	}
	var tried []string
	if onHub(ref) {
		for _, m := range r.mirrors {
			mref, err := m.at(ref)
			if err == nil {
				if err = attempt(mref); err == nil {
					return nil, ""
				}
			}
			if ctx.Err() != nil {
				return err, ""
			}
			tried = append(tried, fmt.Sprintf("%s: %s", m.host, describe(mref, err)))
		}
	}
	if err = attempt(ref); err == nil || len(tried) == 0 {
		return err, ""
	}
	return err, fmt.Sprintf(" (registry mirrors tried first: %s)", strings.Join(tried, "; "))
}
