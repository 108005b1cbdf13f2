package images

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentbox-dev/agentbox/internal/neterr"
	"github.com/agentbox-dev/agentbox/internal/npm"
)

// NPM reads package versions from an npm registry.
type NPM interface {
	// Latest returns the package's "latest" dist-tag, validated with
	// ValidNPMVersion.
	Latest(ctx context.Context, pkg string) (string, error)
	// Packument returns the package's document: its versions, their
	// dependencies and tarball integrities.
	npm.Registry
}

// NPMOptions configures an NPMClient.
type NPMOptions struct {
	Registry  string            // base URL; "" = NPMRegistryFromConfig's answer
	Transport http.RoundTripper // nil = http.DefaultTransport
	Timeout   time.Duration     // 0 = 30 s
	Attempts  int               // 0 = 4
	// ConfigGet asks npm for its registry when no configuration names one;
	// nil = NPMConfigGet.
	ConfigGet func(ctx context.Context) (string, error)
}

// NPMConfigGet asks npm for its registry (`npm config get registry`): npm
// knows its own default and its global configuration.
func NPMConfigGet(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "npm", "config", "get", "registry").Output()
	return strings.TrimSpace(string(out)), err
}

// npmEnvRef is an environment variable named in an .npmrc value.
var npmEnvRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// maxPackageDocument bounds the abbreviated package document read.
const maxPackageDocument = 64 << 20

// NPMClient reads the abbreviated package metadata of an npm registry.
type NPMClient struct {
	mu       sync.Mutex // guards registry and host, set on first use
	registry string     // without trailing slash
	host     string
	client   *http.Client
	timeout  time.Duration
	attempts int
	// configGet asks npm for its registry when registry is empty.
	configGet func(ctx context.Context) (string, error)
}

// NewNPMClient returns a client configured by o. An empty Registry is read
// from npm's configuration for the current directory, and failing that
// asked of npm itself (`npm config get registry`) on first use.
func NewNPMClient(o NPMOptions) *NPMClient {
	if o.Registry == "" {
		o.Registry = NPMRegistryFromConfig(".", os.Getenv)
	}
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
		o.ConfigGet = NPMConfigGet
	}
	c := &NPMClient{
		client:    &http.Client{Transport: o.Transport},
		timeout:   o.Timeout,
		attempts:  o.Attempts,
		configGet: o.ConfigGet,
	}
	c.setRegistry(o.Registry)
	return c
}

func (c *NPMClient) setRegistry(reg string) {
	c.registry = strings.TrimRight(reg, "/")
	c.host = c.registry
	if u, err := url.Parse(c.registry); err == nil && u.Host != "" {
		c.host = u.Host
	}
}

// Latest implements NPM.
func (c *NPMClient) Latest(ctx context.Context, pkg string) (string, error) {
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
	if err := json.Unmarshal(raw, &latest); err != nil || !ValidNPMVersion(latest) {
		return "", fail(err, fmt.Sprintf("malformed response: dist-tags.latest is %s, not an exact version such as 1.2.3", neterr.OneLine(string(raw))))
	}
	return latest, nil
}

// Packument implements NPM.
func (c *NPMClient) Packument(ctx context.Context, pkg string) (*npm.Packument, error) {
	body, fail, err := c.document(ctx, pkg)
	if err != nil {
		return nil, err
	}
	doc, err := npm.ParsePackument(pkg, body)
	if err != nil {
		return nil, fail(err, "malformed response: "+err.Error())
	}
	return doc, nil
}

// document reads a package's abbreviated document; fail describes a
// problem with it.
func (c *NPMClient) document(ctx context.Context, pkg string) ([]byte, func(error, string) error, error) {
	fail := func(err error, msg string) error {
		c.mu.Lock()
		host := c.host
		c.mu.Unlock()
		return &neterr.DescribedError{Msg: fmt.Sprintf("reading npm package %q from %s: %s", pkg, host, msg), Err: err}
	}
	if !ValidNPMName(pkg) {
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
func (c *NPMClient) describe(parent context.Context, err error) string {
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

// statusErr is an npm registry's answer other than 200.
type statusErr struct{ code int }

func (e *statusErr) Error() string { return neterr.Status(e.code) }

// get fetches u with the abbreviated-metadata Accept header, retrying 429,
// 5xx and dropped connections with exponential backoff within ctx.
func (c *NPMClient) get(ctx context.Context, u string) ([]byte, error) {
	wait := firstBackoff
	for attempt := 1; ; attempt++ {
		body, err := c.getOnce(ctx, u)
		if err == nil || attempt >= c.attempts || !npmRetryable(err) {
			return body, err
		}
		jittered := wait + time.Duration(rand.Int64N(int64(wait)/5+1))
		wait *= 2
		t := time.NewTimer(jittered)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func npmRetryable(err error) bool {
	var serr *statusErr
	if errors.As(err, &serr) {
		return neterr.RetryStatus(serr.code)
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && neterr.DroppedConnection(err)
}

func (c *NPMClient) getOnce(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.npm.install-v1+json")
	req.Header.Set("User-Agent", "agentbox")
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

// NPMRegistryFromConfig follows npm's own configuration: the
// NPM_CONFIG_REGISTRY (or npm_config_registry) environment variable, else
// `registry=` in the project's .npmrc (dir/.npmrc), else in $HOME/.npmrc
// (or the file NPM_CONFIG_USERCONFIG names), else "": then the client asks
// npm itself for its default. getenv is os.Getenv in production, a map in tests.
func NPMRegistryFromConfig(dir string, getenv func(string) string) string {
	for _, k := range []string{"NPM_CONFIG_REGISTRY", "npm_config_registry"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	files := []string{filepath.Join(dir, ".npmrc")}
	user := getenv("NPM_CONFIG_USERCONFIG")
	if user == "" {
		user = getenv("npm_config_userconfig")
	}
	if user == "" && getenv("HOME") != "" {
		user = filepath.Join(getenv("HOME"), ".npmrc")
	}
	if user != "" {
		files = append(files, user)
	}
	for _, f := range files {
		if v := npmrcRegistry(f, getenv); v != "" {
			return v
		}
	}
	return "" // npm's own default: asked of npm when needed
}

// npmrcRegistry returns the top-level registry= of an .npmrc, or "". The
// syntax is npm's ini: "#" and ";" start comments (also after an unquoted
// value), spaces around "=" are ignored, values may be quoted and may name
// environment variables as ${NAME}; the last assignment wins.
func npmrcRegistry(file string, getenv func(string) string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	found := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			break // keys after a [section] are not top-level
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "registry" {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if i := strings.IndexAny(v, "#;"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		found = npmEnvRef.ReplaceAllStringFunc(v, func(m string) string { return getenv(m[2 : len(m)-1]) })
	}
	return found
}
