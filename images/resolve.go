package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbox-dev/agentbox/internal/neterr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Resolver resolves an image reference to the digest it points to now.
type Resolver interface {
	// Resolve returns "sha256:<hex>" for ref: for a tag, the digest the tag
	// points to now — for a multi-arch image the INDEX digest, never a
	// platform manifest's; for a reference that carries a digest, that
	// digest, after checking that the registry has it.
	Resolve(ctx context.Context, ref Ref) (string, error)
}

// RegistryOptions configures a RegistryResolver. Zero values mean: a clone
// of http.DefaultTransport that keeps enough idle connections per registry
// for all references at once, authn.DefaultKeychain, a 30 s timeout per
// reference, 4 attempts.
type RegistryOptions struct {
	Transport http.RoundTripper // tests inject one that sends every request to an httptest server
	Keychain  authn.Keychain
	Timeout   time.Duration // per reference, all attempts included
	Attempts  int
	// Mirrors are mirrors of Docker Hub (http:// or https://host[:port]),
	// asked in order for references on Docker Hub before Hub itself.
	Mirrors []string
}

const (
	defaultTimeout  = 30 * time.Second
	defaultAttempts = 4
	firstBackoff    = 100 * time.Millisecond
)

// RegistryResolver resolves references against their registries with
// go-containerregistry. One resolver is meant for one run: it keeps a
// remote.Puller, which pings and authenticates once per repository and
// reuses that transport for every reference naming the repository.
type RegistryResolver struct {
	puller   *remote.Puller
	err      error
	timeout  time.Duration
	attempts int
	mirrors  []mirror
}

// NewRegistryResolver returns a resolver configured by o.
func NewRegistryResolver(o RegistryOptions) *RegistryResolver {
	if o.Transport == nil {
		// http.DefaultTransport keeps 2 idle connections per host: the
		// references' HEADs would then open new TLS connections instead of
		// reusing the ones their pings opened.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		o.Transport = t
	}
	if o.Keychain == nil {
		o.Keychain = authn.DefaultKeychain
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = defaultAttempts
	}
	p, err := remote.NewPuller(
		remote.WithTransport(&retrying{inner: o.Transport, attempts: o.Attempts, first: firstBackoff}),
		remote.WithAuthFromKeychain(o.Keychain),
		remote.WithUserAgent("agentbox"),
		// One attempt per request in go-containerregistry, whose backoff
		// sleeps through a cancelled context: retrying repeats them.
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithRetryStatusCodes(),
	)
	mirrors, merr := parseMirrors(o.Mirrors)
	if err == nil {
		err = merr
	}
	return &RegistryResolver{puller: p, err: err, timeout: o.Timeout, attempts: o.Attempts, mirrors: mirrors}
}

// Resolve implements Resolver.
func (r *RegistryResolver) Resolve(ctx context.Context, ref Ref) (string, error) {
	nref, err := nameRef(ref)
	if err != nil {
		return "", fmt.Errorf("resolving %q: %w", ref.String(), err)
	}
	host := nref.Context().RegistryStr()
	if r.err != nil {
		return "", fmt.Errorf("resolving %q on %s: %w", ref.String(), host, r.err)
	}
	var digest string
	err, note := r.viaMirrors(ctx, nref, r.timeout, func(ctx context.Context, at name.Reference) error {
		d, err := r.resolve(ctx, at)
		digest = d
		return err
	}, func(at name.Reference, err error) string { return r.describe(ctx, ref, at, err) })
	if err != nil {
		return "", &neterr.DescribedError{
			Msg: fmt.Sprintf("resolving %q on %s: %s%s", ref.String(), host, r.describe(ctx, ref, nref, err), note),
			Err: err,
		}
	}
	return digest, nil
}

// nameRef converts ref to go-containerregistry's reference: the digest when
// there is one (go-containerregistry drops the tag of tag@digest), else the tag.
func nameRef(ref Ref) (name.Reference, error) {
	if ref.Repo == "" || ref.Tag == "" {
		return nil, fmt.Errorf("invalid image reference %q", ref.String())
	}
	if ref.Digest != "" {
		return name.NewDigest(ref.Repo+"@"+ref.Digest, name.WeakValidation)
	}
	return name.NewTag(ref.Tagged(), name.WeakValidation)
}

// errMalformed marks a registry answer that carries no usable digest.
var errMalformed = errors.New("malformed response")

func (r *RegistryResolver) resolve(ctx context.Context, ref name.Reference) (string, error) {
	desc, err := r.puller.Head(ctx, ref)
	if err == nil && ValidDigest(desc.Digest.String()) {
		return desc.Digest.String(), nil
	}
	if err != nil && !headFallback(err) {
		return "", err
	}
	headErr := err
	if headErr == nil {
		headErr = fmt.Errorf("HEAD returned digest %q", desc.Digest)
	}
	got, err := r.puller.Get(ctx, ref)
	if err != nil {
		return "", err
	}
	if !isManifest(got.MediaType, got.Manifest) {
		return "", errors.Join(errMalformed, headErr, fmt.Errorf("GET returned %q, not a manifest", got.MediaType))
	}
	return got.Digest.String(), nil
}

// headFallback reports whether a failed HEAD is worth a GET: the registry
// does not support HEAD (405, 501), answered without a usable digest, or
// said 404 (a HEAD has no body, the GET's error code tells an unknown tag
// from an unknown repository). Network failures, timeouts, authentication
// and server errors are final.
func headFallback(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			return !isPing(terr)
		}
		return false
	}
	var uerr interface{ Timeout() bool }
	if errors.As(err, &uerr) || neterr.DroppedConnection(err) || neterr.NetError(err) != "" {
		return false
	}
	// What is left: a 200 without Docker-Content-Digest, Content-Type or
	// Content-Length, or with a digest that is not one.
	return true
}

// isPing reports whether the failed request was the /v2/ ping.
func isPing(terr *transport.Error) bool {
	return terr.Request != nil && strings.TrimSuffix(terr.Request.URL.Path, "/") == "/v2"
}

// isManifest reports whether body is an image manifest or an index.
func isManifest(mt types.MediaType, body []byte) bool {
	var m struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Config        json.RawMessage `json:"config"`
		Manifests     json.RawMessage `json:"manifests"`
	}
	if json.Unmarshal(body, &m) != nil || m.SchemaVersion != 2 {
		return false
	}
	if m.MediaType != "" {
		mt = types.MediaType(m.MediaType)
	}
	switch {
	case mt.IsIndex():
		return len(m.Manifests) > 0
	case mt.IsImage():
		return len(m.Config) > 0
	}
	// An OCI manifest may omit its mediaType and the registry may send a
	// generic Content-Type: judge by shape.
	return len(m.Config) > 0 || len(m.Manifests) > 0
}

// ResolveAll resolves refs concurrently (all at once; refs naming the same
// repository share one authenticated transport so a run costs ~one
// round-trip wave, not one per reference). progress, if not nil, is called
// once per reference as it finishes (from any goroutine; calls are
// serialized), with the digest or the error. It returns digests keyed by
// ref.String() and every error, sorted by reference. A reference listed
// twice is resolved, reported and returned once.
func ResolveAll(ctx context.Context, r Resolver, refs []Ref, progress func(ref Ref, digest string, err error)) (map[string]string, []error) {
	type failure struct {
		key string
		err error
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		digests  = map[string]string{}
		failures []failure
		seen     = map[string]bool{}
	)
	for _, ref := range refs {
		key := ref.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		wg.Go(func() {
			d, err := r.Resolve(ctx, ref)
			if err == nil && !ValidDigest(d) {
				err = fmt.Errorf("resolving %q: the resolver returned %q, not a sha256 digest", key, d)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				d = ""
				failures = append(failures, failure{key, err})
			} else {
				digests[key] = d
			}
			if progress != nil {
				progress(ref, d, err)
			}
		})
	}
	wg.Wait()
	slices.SortFunc(failures, func(a, b failure) int { return strings.Compare(a.key, b.key) })
	var errs []error
	for _, f := range failures {
		errs = append(errs, f.err)
	}
	return digests, errs
}
