package debian

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/fakedebian"
)

type pkg = fakedebian.Package

// addBookworm fills the state at ts with a small bookworm for amd64, libc6
// at libc.
func addBookworm(srv *fakedebian.Server, ts, libc string) {
	srv.Add(ts, "bookworm", "amd64",
		pkg{Name: "git", Version: "1:2.39.5-0+deb12u1", Depends: "libc6 (>= 2.34), perl, git-man (<< 1:2.39.5-.)"},
		pkg{Name: "git-man", Version: "1:2.39.5-0+deb12u1", Architecture: "all"},
		pkg{Name: "libc6", Version: libc},
		pkg{Name: "perl", Version: "5.36.0-7+deb12u1", PreDepends: "dpkg (>= 1.17.17)", Depends: "perl-base (= 5.36.0-7+deb12u1)"},
		pkg{Name: "perl-base", Version: "5.36.0-7+deb12u1", PreDepends: "libc6 (>= 2.35)"},
		pkg{Name: "dpkg", Version: "1.21.22", PreDepends: "libc6 (>= 2.34), tar (>= 1.28-1)"},
		pkg{Name: "tar", Version: "1.34+dfsg-1.2+deb12u1", PreDepends: "libc6:any (>= 2.34)"},
		pkg{Name: "ca-certificates", Version: "20230311", Architecture: "all", Depends: "openssl (>= 1.1.1), debconf (>= 0.5) | debconf-2.0"},
		pkg{Name: "openssl", Version: "3.0.15-1~deb12u1", Depends: "libc6 (>= 2.34), libssl3"},
		pkg{Name: "libssl3", Version: "3.0.15-1~deb12u1", Depends: "libc6 (>= 2.34)"},
		pkg{Name: "debconf", Version: "1.5.82", Architecture: "all", Depends: "perl-base (>= 5.20.1-3~)", Provides: "debconf-2.0"},
		pkg{Name: "cdebconf", Version: "0.270", Provides: "debconf-2.0", Depends: "libc6 (>= 2.36)"},
		pkg{Name: "mawk", Version: "1.3.4.20200120-3.1", Provides: "awk"},
		pkg{Name: "gawk", Version: "1:5.2.1-2", Provides: "awk"},
		pkg{Name: "arm-only", Version: "1.0", Architecture: "arm64"},
	)
	srv.Add(ts, "bookworm-updates", "amd64", pkg{Name: "tzdata", Version: "2025b-0+deb12u1", Architecture: "all"})
	srv.Add(ts, "bookworm-security", "amd64",
		pkg{Name: "git", Version: "1:2.39.5-0+deb12u2", Depends: "libc6 (>= 2.34), perl, git-man (<< 1:2.39.5-.)"},
		pkg{Name: "git-man", Version: "1:2.39.5-0+deb12u2", Architecture: "all"},
		pkg{Name: "openssl", Version: "3.0.14-1~deb12u2", Depends: "libc6 (>= 2.34)"},
	)
}

func resolve(t *testing.T, srv *fakedebian.Server, ts string, names ...string) (Resolution, error) {
	t.Helper()
	return newArchive(srv).Resolve(context.Background(), Snapshot{Debian: ts, Security: ts}, "bookworm", "amd64", names)
}

func TestResolve(t *testing.T) {
	srv := fakedebian.New(t)
	srv.XZ = true // as Debian serves its -updates and -security suites
	addBookworm(srv, ts1, "2.36-9+deb12u9")
	got, err := resolve(t, srv, ts1, "git", "ca-certificates", "openssl", "tzdata")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"git":             "1:2.39.5-0+deb12u2", // security's over the release's
		"ca-certificates": "20230311",
		"openssl":         "3.0.15-1~deb12u1", // the release's over an older one in security
		"tzdata":          "2025b-0+deb12u1",
	}
	if !reflect.DeepEqual(got.Versions, want) {
		t.Errorf("Versions = %v, want %v", got.Versions, want)
	}
	// git git-man libc6 perl perl-base dpkg tar ca-certificates openssl
	// libssl3 debconf cdebconf (a provider of debconf-2.0) tzdata
	if got.ClosureSize != 13 {
		t.Errorf("ClosureSize = %d, want 13", got.ClosureSize)
	}
	if !strings.HasPrefix(got.Closure, "sha256:") || len(got.Closure) != len("sha256:")+64 {
		t.Errorf("Closure = %q, want sha256:<hex>", got.Closure)
	}
	wantReqs := []string{
		"/archive/debian/" + ts1 + "/dists/bookworm/main/binary-amd64/Packages.xz",
		"/archive/debian/" + ts1 + "/dists/bookworm-updates/main/binary-amd64/Packages.xz",
		"/archive/debian-security/" + ts1 + "/dists/bookworm-security/main/binary-amd64/Packages.xz",
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !sameSet(reqs, wantReqs) {
		t.Errorf("requests %q, want %q", reqs, wantReqs)
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestResolvePinned(t *testing.T) {
	srv := fakedebian.New(t)
	addBookworm(srv, ts1, "2.36-9+deb12u9")
	got, err := resolve(t, srv, ts1, "git=1:2.39.5-0+deb12u1", "openssl=3.0.14-1~deb12u2")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"git": "1:2.39.5-0+deb12u1", "openssl": "3.0.14-1~deb12u2"}
	if !reflect.DeepEqual(got.Versions, want) {
		t.Errorf("Versions = %v, want %v", got.Versions, want)
	}
	unpinned, err := resolve(t, srv, ts1, "git", "openssl")
	if err != nil {
		t.Fatal(err)
	}
	if got.Closure == unpinned.Closure {
		t.Error("pinning older versions left the closure digest unchanged")
	}
	// The pinned openssl depends on libc6 only; the candidate also on libssl3.
	if got.ClosureSize != unpinned.ClosureSize-1 {
		t.Errorf("ClosureSize pinned %d, unpinned %d: want one fewer", got.ClosureSize, unpinned.ClosureSize)
	}
}

func TestResolveErrors(t *testing.T) {
	srv := fakedebian.New(t)
	addBookworm(srv, ts1, "2.36-9+deb12u9")
	_, err := resolve(t, srv, ts1, "git", "foo", "git-man=1:9.9-1", "awk", "arm-only", "Bad", "tar=", "git=2")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`package "foo" is not in Debian bookworm (amd64) at snapshot ` + ts1,
		`package "git-man" has no version "1:9.9-1" in Debian bookworm (amd64) at snapshot ` + ts1 + `; it has 1:2.39.5-0+deb12u1, 1:2.39.5-0+deb12u2`,
		`package "awk" is virtual in Debian bookworm (amd64); name one of its providers: gawk, mawk`,
		`package "arm-only" is not in Debian bookworm (amd64)`,
		`invalid package name "Bad"`,
		`invalid version "" in "tar="`,
		`package "git" is named twice`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nlacks %q", err, want)
		}
	}
}

func TestResolveArguments(t *testing.T) {
	srv := fakedebian.New(t)
	a := newArchive(srv)
	ctx := context.Background()
	good := Snapshot{Debian: ts1, Security: ts1}
	cases := []struct {
		snap          Snapshot
		release, arch string
		want          string
	}{
		{Snapshot{Debian: "2026", Security: ts1}, "bookworm", "amd64", `invalid snapshot timestamp "2026"`},
		{good, "../x", "amd64", `invalid release "../x"`},
		{good, "bookworm", "amd64/..", `invalid architecture "amd64/.."`},
	}
	for _, c := range cases {
		_, err := a.Resolve(ctx, c.snap, c.release, c.arch, []string{"git"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests for invalid arguments", n)
	}
}

func TestResolveMissingSuite(t *testing.T) {
	srv := fakedebian.New(t)
	srv.Add(ts1, "bookworm", "amd64", pkg{Name: "git", Version: "1"})
	srv.Add(ts1, "bookworm-security", "amd64", pkg{Name: "git", Version: "1"})
	_, err := resolve(t, srv, ts1, "git")
	if err == nil || !strings.Contains(err.Error(), "suite bookworm-updates (amd64) is not in the archive") {
		t.Errorf("error %v, want the missing suite named", err)
	}
	srv.Add(ts1, "sid", "arm64", pkg{Name: "git", Version: "2"})
	got, err := newArchive(srv).Resolve(context.Background(), Snapshot{Debian: ts1, Security: ts1}, "sid", "arm64", []string{"git"})
	if err != nil {
		t.Fatalf("sid has no -updates or -security suite: %v", err)
	}
	if got.Versions["git"] != "2" {
		t.Errorf("sid: git %q, want 2", got.Versions["git"])
	}
}

func TestClosureDrift(t *testing.T) {
	srv := fakedebian.New(t)
	addBookworm(srv, ts1, "2.36-9+deb12u9")
	addBookworm(srv, ts2, "2.36-9+deb12u10")
	first, err := resolve(t, srv, ts1, "git")
	if err != nil {
		t.Fatal(err)
	}
	again, err := resolve(t, srv, ts1, "git")
	if err != nil {
		t.Fatal(err)
	}
	later, err := resolve(t, srv, ts2, "git")
	if err != nil {
		t.Fatal(err)
	}
	if first.Closure != again.Closure {
		t.Errorf("the same snapshot gave %s then %s", first.Closure, again.Closure)
	}
	if !reflect.DeepEqual(first.Versions, later.Versions) {
		t.Errorf("git itself moved: %v, %v", first.Versions, later.Versions)
	}
	if first.Closure == later.Closure {
		t.Error("a newer libc6 left the closure digest unchanged")
	}
}

// TestResolveGzipOnly: a copy of the archive with Packages.gz only is
// read after its Packages.xz is not found.
func TestResolveGzipOnly(t *testing.T) {
	srv := fakedebian.New(t)
	addBookworm(srv, ts1, "2.36-9+deb12u9")
	got, err := resolve(t, srv, ts1, "git")
	if err != nil {
		t.Fatal(err)
	}
	if got.Versions["git"] != "1:2.39.5-0+deb12u2" {
		t.Errorf("git %q", got.Versions["git"])
	}
	var gz, xz int
	for _, r := range srv.Requests() {
		gz += strings.Count(r, ".gz")
		xz += strings.Count(r, ".xz")
	}
	if gz != 3 || xz != 3 {
		t.Errorf("requests %q: want each suite's .xz, then its .gz", srv.Requests())
	}
}

func TestResolveRetries(t *testing.T) {
	srv := fakedebian.New(t)
	srv.XZ = true
	addBookworm(srv, ts1, "2.36-9+deb12u9")
	srv.Fail("bookworm-updates", 503, 0)
	if _, err := resolve(t, srv, ts1, "git"); err != nil {
		t.Fatalf("after a 503 and a dropped connection: %v", err)
	}
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("%d requests, want 5 (3 indexes, 2 retries)", n)
	}
	srv.Fail("bookworm-security", 503, 503, 503)
	_, err := resolve(t, srv, ts1, "git")
	if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable after 3 attempts") {
		t.Errorf("error %v, want 503 after 3 attempts", err)
	}
}

func TestResolveSizeBound(t *testing.T) {
	srv := fakedebian.New(t)
	addBookworm(srv, ts1, "2.36-9+deb12u9")
	a := newArchive(srv)
	a.MaxIndexSize = 512
	_, err := a.Resolve(context.Background(), Snapshot{Debian: ts1, Security: ts1}, "bookworm", "amd64", []string{"git"})
	if !errors.Is(err, ErrIndexTooLarge) || !strings.Contains(err.Error(), "bookworm/main/binary-amd64/Packages.gz") {
		t.Errorf("error %v, want ErrIndexTooLarge naming the index", err)
	}
}

func TestResolveHostileIndex(t *testing.T) {
	cases := []struct {
		name, index, want string
	}{
		{"nul", "Package: git\nVersion: 1\x00\n", "line 2: NUL byte"},
		{"no version", "Package: git\nArchitecture: amd64\n", `line 1: stanza of package "git" has no Version`},
		{"huge line", "Package: git\nVersion: 1\nArchitecture: amd64\nDescription: " + strings.Repeat("x", 4<<20) + "\n", ""},
		{"bad relation", "Package: git\nVersion: 1\nArchitecture: amd64\nDepends: libc6, (>= 2)\n", `package "git" version 1: Depends: invalid package name in relation "(>= 2)"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := fakedebian.New(t)
			addBookworm(srv, ts1, "2.36-9+deb12u9")
			srv.SetRaw(ts1, "bookworm", "amd64", fakedebian.Gzip([]byte(c.index)))
			_, err := resolve(t, srv, ts1, "git=1")
			if c.want == "" {
				if err != nil {
					t.Errorf("a long line: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestResolveBadGzip(t *testing.T) {
	whole := fakedebian.Gzip([]byte("Package: git\nVersion: 1\nArchitecture: amd64\n"))
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"not gzip", []byte("Package: git\n"), "decompressing"},
		{"empty", nil, "decompressing"},
		{"truncated", whole[:len(whole)-6], "unexpected EOF"},
		{"bomb", fakedebian.Gzip(make([]byte, 4<<20)), "more than 1048576 bytes decompressed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := fakedebian.New(t)
			addBookworm(srv, ts1, "2.36-9+deb12u9")
			srv.SetRaw(ts1, "bookworm", "amd64", c.data)
			a := newArchive(srv)
			a.MaxIndexSize = 1 << 20
			_, err := a.Resolve(context.Background(), Snapshot{Debian: ts1, Security: ts1}, "bookworm", "amd64", []string{"git"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
