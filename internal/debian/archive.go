package debian

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"
)

// Defaults of the zero fields of Archive.
const (
	DefaultTimeout      = 2 * time.Minute
	DefaultRetryWait    = time.Second
	DefaultMaxIndexSize = 512 << 20
	attempts            = 3
)

// timestampFormat is the snapshot service's timestamp, in UTC.
const timestampFormat = "20060102T150405Z"

var timestampRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z$`)

// The layouts of an archive.
const (
	// LayoutSnapshot is the snapshot service's: every state of the archive.
	LayoutSnapshot = "snapshot"
	// LayoutPlain is a plain mirror's: the archive's current state only.
	LayoutPlain = "plain"
)

// Archive is a Debian archive in the layout of the snapshot service:
// Base/debian/TIMESTAMP/dists/SUITE/... and Base/debian-security/TIMESTAMP/
// dists/SUITE-security/..., where Base is a URL such as
// https://snapshot.debian.org/archive. With Layout LayoutPlain it is a
// plain mirror instead: Base/dists/SUITE/... and Security/dists/
// SUITE-security/..., one state, whatever timestamp is asked for.
type Archive struct {
	Base     string
	Layout   string       // "" or LayoutSnapshot, or LayoutPlain
	Security string       // the security archive of a plain mirror
	Client   *http.Client // nil: http.DefaultClient

	Timeout      time.Duration // of one request, body included; 0: DefaultTimeout
	RetryWait    time.Duration // before the first retry, doubling; 0: DefaultRetryWait
	MaxIndexSize int64         // of a Packages index, decompressed; 0: DefaultMaxIndexSize
}

// Snapshot names a concrete state of the debian and debian-security
// archives by their timestamps (YYYYMMDDTHHMMSSZ).
type Snapshot struct {
	Debian, Security string
}

// Snapshot returns the latest states of debian and debian-security at or
// before at. The service answers a request for any time with a redirect to
// its concrete state, which Snapshot reads without following; a server that
// answers 200 instead keeps the time asked for.
//
// A plain mirror has one state, its current one: Snapshot asks it nothing
// and names the time asked for (the time of a bump), which Resolve then
// ignores.
func (a *Archive) Snapshot(ctx context.Context, at time.Time) (Snapshot, error) {
	ts := at.UTC().Format(timestampFormat)
	if a.Layout == LayoutPlain {
		return Snapshot{Debian: ts, Security: ts}, nil
	}
	debian, err := a.timestamp(ctx, "debian", ts)
	if err != nil {
		return Snapshot{}, err
	}
	security, err := a.timestamp(ctx, "debian-security", ts)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Debian: debian, Security: security}, nil
}

// timestamp resolves the state of archive at or before ts.
func (a *Archive) timestamp(ctx context.Context, archive, ts string) (string, error) {
	url := a.url(archive, ts, "")
	resp, err := a.get(ctx, url, false, 0)
	if err != nil {
		return "", err
	}
	switch resp.status {
	case http.StatusOK:
		return ts, nil
	case http.StatusNotFound:
		return "", fmt.Errorf("no snapshot of %s at or before %s (%s answered 404)", archive, ts, url)
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return "", fmt.Errorf("GET %s: %s", url, resp.statusText)
	}
	p := strings.TrimSuffix(resp.location, "/")
	got := path.Base(p)
	if !timestampRE.MatchString(got) || path.Base(path.Dir(p)) != archive {
		return "", fmt.Errorf("GET %s: unexpected redirect to %q, want .../%s/YYYYMMDDTHHMMSSZ/", url, resp.location, archive)
	}
	if got > ts {
		return "", fmt.Errorf("GET %s: redirect to %s, later than the time asked for", url, got)
	}
	return got, nil
}

// url returns the URL of rest under archive's state ts (a plain mirror's
// only state).
func (a *Archive) url(archive, ts, rest string) string {
	if a.Layout == LayoutPlain {
		base := a.Base
		if archive == "debian-security" {
			base = a.Security
		}
		return strings.TrimSuffix(base, "/") + "/" + rest
	}
	return strings.TrimSuffix(a.Base, "/") + "/" + archive + "/" + ts + "/" + rest
}

// response is what get keeps of an HTTP response.
type response struct {
	status     int
	statusText string
	location   string // the Location header's path, resolved against the request
	body       []byte // read only for 200, and only when get was given a limit
}

// get GETs url, retrying dropped connections, 5xx and 429 answers, up to
// attempts in all. It follows redirects only if follow is set. With limit > 0
// it reads the body of a 200 answer, which may be at most limit bytes.
func (a *Archive) get(ctx context.Context, url string, follow bool, limit int64) (*response, error) {
	wait := a.RetryWait
	if wait == 0 {
		wait = DefaultRetryWait
	}
	var last error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("GET %s: %w (after %v)", url, ctx.Err(), last)
			case <-time.After(wait << (i - 1)):
			}
		}
		resp, err := a.once(ctx, url, follow, limit)
		if err == nil && resp.status != http.StatusTooManyRequests && resp.status < 500 {
			return resp, nil
		}
		if err == nil {
			err = fmt.Errorf("GET %s: %s", url, resp.statusText)
		}
		if errors.Is(err, ErrIndexTooLarge) || ctx.Err() != nil {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("%w after %d attempts", last, attempts)
}

// once makes one attempt of get, within the per-request timeout.
func (a *Archive) once(ctx context.Context, url string, follow bool, limit int64) (*response, error) {
	timeout := a.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	client := http.DefaultClient
	if a.Client != nil {
		client = a.Client
	}
	if !follow {
		c := *client
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		client = &c
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err // *url.Error names the method and URL
	}
	defer resp.Body.Close()
	out := &response{status: resp.StatusCode, statusText: resp.Status}
	if loc, err := resp.Location(); err == nil {
		out.location = loc.Path
	}
	if resp.StatusCode != http.StatusOK || limit <= 0 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return out, nil
	}
	out.body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	if int64(len(out.body)) > limit {
		return nil, fmt.Errorf("GET %s: %w: more than %d bytes", url, ErrIndexTooLarge, limit)
	}
	return out, nil
}
