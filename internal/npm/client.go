package npm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentbox-dev/agentbox/internal/neterr"
	"github.com/agentbox-dev/agentbox/internal/retry"
)

// Source is the npm registry a bump reads: each package's "latest" version
// and its document. *Client reads one over HTTP.
type Source interface {
	// Latest returns the package's "latest" dist-tag, validated with
	// ValidVersion.
	Latest(ctx context.Context, pkg string) (string, error)
	// Packument returns the package's document: its versions, their
	// dependencies and tarball integrities.
	Registry
}

// Options configures a Client. The client reads no environment: the caller
// passes the registry, for example RegistryFromConfig's answer.
type Options struct {
	Registry  string            // base URL; "" = asked of npm (ConfigGet) on first use
	Transport http.RoundTripper // nil = http.DefaultTransport
	Timeout   time.Duration     // 0 = 30 s
	Attempts  int               // 0 = 4
	// Authorization is the header sent with every request to the
	// registry (AuthFromConfig's Header), "" for none.
	Authorization string
	// ConfigGet asks npm for its registry when Registry is empty; nil =
	// the package's ConfigGet.
	ConfigGet func(ctx context.Context) (string, error)
}

const (
	defaultTimeout  = 30 * time.Second
	defaultAttempts = 4
	firstBackoff    = 100 * time.Millisecond
)

// maxPackageDocument bounds the abbreviated package document read.
const maxPackageDocument = 64 << 20

// Client reads the abbreviated package metadata of an npm registry.
type Client struct {
	mu       sync.Mutex // guards registry and host, set on first use
	registry string     // without trailing slash
	host     string
	client   *http.Client
	timeout  time.Duration
	attempts int
	first    time.Duration // the first wait before a retry
	auth     string        // the Authorization header, "" for none
	// configGet asks npm for its registry when registry is empty.
	configGet func(ctx context.Context) (string, error)
}

var _ Source = (*Client)(nil)

// NewClient returns a client configured by o. An empty Registry is asked of
// npm itself (`npm config get registry`) on first use.
func NewClient(o Options) *Client {
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = defaultAttempts
	}
	if o.ConfigGet == nil {
		o.ConfigGet = ConfigGet
	}
	c := &Client{
		client:    &http.Client{Transport: o.Transport},
		timeout:   o.Timeout,
		attempts:  o.Attempts,
		first:     firstBackoff,
		configGet: o.ConfigGet,
		auth:      o.Authorization,
	}
	c.setRegistry(o.Registry)
	return c
}

func (c *Client) setRegistry(reg string) {
	c.registry = strings.TrimRight(reg, "/")
	c.host = c.registry
	if u, err := url.Parse(c.registry); err == nil && u.Host != "" {
		c.host = u.Host
	}
}

// Latest implements Source.
func (c *Client) Latest(ctx context.Context, pkg string) (string, error) {
	body, fail, err := c.document(ctx, pkg)
	if err != nil {
		return "", err
	}
	var doc struct {
		DistTags map[string]json.RawMessage `json:"dist-tags"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fail(err, "malformed response: the package document is not valid json")
	}
	raw, ok := doc.DistTags["latest"]
	if !ok {
		return "", fail(nil, "malformed response: the package document has no dist-tags.latest")
	}
	var latest string
	if err := json.Unmarshal(raw, &latest); err != nil || !ValidVersion(latest) {
		return "", fail(err, fmt.Sprintf("malformed response: dist-tags.latest is %s, not an exact version such as 1.2.3", neterr.OneLine(string(raw))))
	}
	return latest, nil
}

// Packument implements Registry.
func (c *Client) Packument(ctx context.Context, pkg string) (*Packument, error) {
	body, fail, err := c.document(ctx, pkg)
	if err != nil {
		return nil, err
	}
	doc, err := ParsePackument(pkg, body)
	if err != nil {
		return nil, fail(err, "malformed response: "+err.Error())
	}
	return doc, nil
}

// document reads a package's abbreviated document; fail describes a
// problem with it.
func (c *Client) document(ctx context.Context, pkg string) ([]byte, func(error, string) error, error) {
	fail := func(err error, msg string) error {
		c.mu.Lock()
		host := c.host
		c.mu.Unlock()
		return &neterr.DescribedError{Msg: fmt.Sprintf("reading npm package %q from %s: %s", pkg, host, msg), Err: err}
	}
	if !ValidName(pkg) {
		return nil, fail, fail(nil, "invalid npm package name")
	}
	c.mu.Lock()
	if c.registry == "" {
		reg, err := c.configGet(ctx)
		if err != nil || !strings.HasPrefix(reg, "http") {
			c.mu.Unlock()
			return nil, fail, &neterr.DescribedError{Msg: fmt.Sprintf("reading npm package %q: no npm registry configured (set NPM_CONFIG_REGISTRY or registry= in .npmrc), and npm could not say its default", pkg), Err: err}
		}
		c.setRegistry(reg)
	}
	registry := c.registry
	c.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, err := c.get(rctx, registry+"/"+strings.Replace(pkg, "/", "%2f", 1))
	if err != nil {
		return nil, fail, fail(err, c.describe(ctx, err))
	}
	return body, fail, nil
}

// describe says in one line why a request failed.
func (c *Client) describe(parent context.Context, err error) string {
	if s := neterr.ContextError(parent, err, c.timeout); s != "" {
		return s
	}
	var serr *statusErr
	if errors.As(err, &serr) {
		switch serr.code {
		case http.StatusNotFound:
			return fmt.Sprintf("package not found (%s)", neterr.Status(serr.code))
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Sprintf("authentication refused (%s)", neterr.Status(serr.code))
		}
		return neterr.StatusError(serr.code, c.attempts)
	}
	return neterr.DescribeNetwork(err, c.attempts)
}

// ErrNotFound is a registry's answer that it has no such package.
var ErrNotFound = errors.New("npm package not found")

// statusErr is an npm registry's answer other than 200.
type statusErr struct{ code int }

func (e *statusErr) Error() string { return neterr.Status(e.code) }

// Is makes a 404 ErrNotFound.
func (e *statusErr) Is(target error) bool {
	return target == ErrNotFound && e.code == http.StatusNotFound
}

// get fetches u with the abbreviated-metadata Accept header, retrying 429,
// 5xx and dropped connections with retry.Do's backoff within ctx.
func (c *Client) get(ctx context.Context, u string) ([]byte, error) {
	var body []byte
	err := retry.Do(ctx, c.attempts, c.first, retryable, func(ctx context.Context) error {
		var err error
		body, err = c.getOnce(ctx, u)
		return err
	})
	return body, err
}

// retryable reports whether a failed request is worth repeating: an answer
// neterr.RetryStatus accepts or a connection the registry dropped.
// Timeouts, refused connections and every other answer are final.
func retryable(err error) bool {
	var serr *statusErr
	if errors.As(err, &serr) {
		return neterr.RetryStatus(serr.code)
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && neterr.DroppedConnection(err)
}

func (c *Client) getOnce(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.npm.install-v1+json")
	req.Header.Set("User-Agent", "agentbox")
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &statusErr{resp.StatusCode}
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxPackageDocument))
}
