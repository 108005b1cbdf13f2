package debian

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/internal/testing/fakedebian"
)

// A plain mirror: one state of the archive at Base/dists/..., its security
// archive at its own address. Snapshot asks nothing (the mirror has no
// states): it names the time of the bump. Resolve reads the mirror's
// suites.
func TestPlainMirror(t *testing.T) {
	srv := fakedebian.New(t)
	addBookworm(srv, ts1, "2.36-9+deb12u9")
	a := &Archive{Layout: LayoutPlain, Base: srv.Base() + "/debian/" + ts1 + "/",
		Security: srv.Base() + "/debian-security/" + ts1, Client: srv.Client(), RetryWait: time.Millisecond}
	at := time.Date(2026, 11, 27, 3, 4, 5, 0, time.FixedZone("x", 3600))
	snap, err := a.Snapshot(context.Background(), at)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Snapshot{Debian: "20261127T020405Z", Security: "20261127T020405Z"}); snap != want {
		t.Errorf("Snapshot = %+v, want %+v", snap, want)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Errorf("Snapshot asked the plain mirror %q", reqs)
	}
	got, err := a.Resolve(context.Background(), snap, "bookworm", "amd64", []string{"git", "tzdata"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"git": "1:2.39.5-0+deb12u2", "tzdata": "2025b-0+deb12u1"}; !reflect.DeepEqual(got.Versions, want) {
		t.Errorf("Versions = %v, want %v", got.Versions, want)
	}
	wantReqs := []string{
		"/archive/debian/" + ts1 + "/dists/bookworm/main/binary-amd64/Packages.xz",
		"/archive/debian/" + ts1 + "/dists/bookworm/main/binary-amd64/Packages.gz",
		"/archive/debian/" + ts1 + "/dists/bookworm-updates/main/binary-amd64/Packages.xz",
		"/archive/debian/" + ts1 + "/dists/bookworm-updates/main/binary-amd64/Packages.gz",
		"/archive/debian-security/" + ts1 + "/dists/bookworm-security/main/binary-amd64/Packages.xz",
		"/archive/debian-security/" + ts1 + "/dists/bookworm-security/main/binary-amd64/Packages.gz",
	}
	if reqs := srv.Requests(); !sameSet(reqs, wantReqs) {
		t.Errorf("requests %q, want %q", reqs, wantReqs)
	}
	// Without its security archive a plain mirror is refused: builds
	// would miss every security fix.
	a.Security = ""
	if _, err := a.Resolve(context.Background(), snap, "bookworm", "amd64", []string{"git"}); err == nil {
		t.Error("a plain mirror without a security archive resolved")
	}
}
