package debian

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/fakedebian"
	_ "github.com/agentbox-dev/agentbox/internal/testing/golden"
)

const (
	ts1 = "20261101T000000Z"
	ts2 = "20261115T120000Z"
	at  = "20261122T145011Z"
)

// newArchive returns an Archive on srv that retries without waiting.
func newArchive(srv *fakedebian.Server) *Archive {
	return &Archive{Base: srv.Base(), Client: srv.Client(), RetryWait: time.Millisecond}
}

func mustTime(t *testing.T, ts string) time.Time {
	t.Helper()
	tm, err := time.Parse("20060102T150405Z", ts)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestSnapshot(t *testing.T) {
	for _, redirect := range []bool{true, false} {
		srv := fakedebian.New(t)
		srv.Redirect = redirect
		srv.Add(ts1, "bookworm", "amd64", fakedebian.Package{Name: "git", Version: "1"})
		srv.Add(ts2, "bookworm-security", "amd64", fakedebian.Package{Name: "git", Version: "2"})
		got, err := newArchive(srv).Snapshot(context.Background(), mustTime(t, at))
		if err != nil {
			t.Fatal(err)
		}
		want := Snapshot{Debian: ts1, Security: ts2}
		if !redirect {
			want = Snapshot{Debian: at, Security: at}
		}
		if got != want {
			t.Errorf("redirect %v: Snapshot = %+v, want %+v", redirect, got, want)
		}
		wantReqs := []string{"/archive/debian/" + at + "/", "/archive/debian-security/" + at + "/"}
		if reqs := srv.Requests(); strings.Join(reqs, " ") != strings.Join(wantReqs, " ") {
			t.Errorf("redirect %v: requests %q, want %q (redirects not followed)", redirect, reqs, wantReqs)
		}
	}
}

func TestSnapshotErrors(t *testing.T) {
	cases := []struct {
		name     string
		location string
		status   int
		want     string
	}{
		{"garbage timestamp", "/archive/debian/2026-11-22/", 301, `unexpected redirect`},
		{"later timestamp", "/archive/debian/20261123T000000Z/", 302, `later than`},
		{"other archive", "/archive/ubuntu/20261101T000000Z/", 301, `unexpected redirect`},
		{"no location", "", 301, `unexpected redirect`},
		{"none", "", 404, `no snapshot of debian at or before 20261122T145011Z`},
		{"forbidden", "", 403, `403 Forbidden`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.location != "" {
					w.Header().Set("Location", c.location)
				}
				w.WriteHeader(c.status)
			}))
			defer srv.Close()
			a := &Archive{Base: srv.URL + "/archive", Client: srv.Client()}
			_, err := a.Snapshot(context.Background(), mustTime(t, at))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestSnapshotRetries(t *testing.T) {
	srv := fakedebian.New(t)
	srv.Add(ts1, "bookworm", "amd64", fakedebian.Package{Name: "git", Version: "1"})
	srv.Add(ts1, "bookworm-security", "amd64", fakedebian.Package{Name: "git", Version: "1"})
	srv.Fail("/debian/", 503, 0)
	if _, err := newArchive(srv).Snapshot(context.Background(), mustTime(t, at)); err != nil {
		t.Fatalf("after a 503 and a dropped connection: %v", err)
	}
	srv.Fail("/debian-security/", 503, 429, 500)
	_, err := newArchive(srv).Snapshot(context.Background(), mustTime(t, at))
	if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error after 3 attempts") {
		t.Errorf("error %v, want the last status after 3 attempts", err)
	}
}

func TestSnapshotCancelled(t *testing.T) {
	srv := fakedebian.New(t)
	srv.Fail("/debian/", 503, 503, 503)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := newArchive(srv)
	a.RetryWait = time.Hour
	if _, err := a.Snapshot(ctx, mustTime(t, at)); err == nil {
		t.Fatal("a cancelled context gave no error")
	}
}

func TestRetriesDroppedConnections(t *testing.T) {
	srv := fakedebian.New(t)
	srv.Add(ts1, "bookworm", "amd64", fakedebian.Package{Name: "git", Version: "1"})
	srv.Add(ts1, "bookworm-security", "amd64", fakedebian.Package{Name: "git", Version: "1"})
	srv.Fail("/debian/", 0, 0)
	a := newArchive(srv)
	// Without keep-alives, net/http never retries by itself: only Archive does.
	a.Client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if _, err := a.Snapshot(context.Background(), mustTime(t, at)); err != nil {
		t.Fatalf("after two dropped connections: %v", err)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

func TestRequestTimeout(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-r.Context().Done()
	}))
	defer srv.Close()
	a := &Archive{Base: srv.URL, Client: srv.Client(), Timeout: 20 * time.Millisecond, RetryWait: time.Millisecond}
	_, err := a.Snapshot(context.Background(), mustTime(t, at))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("error %v, want a deadline after 3 attempts", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestCancelledDuringFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	// The context ends once the 503 has arrived, before any retry.
	client := &http.Client{Transport: cancelAfter{srv.Client().Transport, cancel}}
	a := &Archive{Base: srv.URL, Client: client, RetryWait: time.Hour}
	if _, err := a.Snapshot(ctx, mustTime(t, at)); err == nil {
		t.Fatal("no error")
	}
}

// cancelAfter calls cancel after each round trip.
type cancelAfter struct {
	rt     http.RoundTripper
	cancel func()
}

func (c cancelAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	c.cancel()
	return resp, err
}
