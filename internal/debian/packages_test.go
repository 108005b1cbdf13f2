package debian

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParsePackages(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	in := "Package: git\n" +
		"Version: 1:2.39.5-0+deb12u2\n" +
		"Architecture: amd64\n" +
		"Depends: libc6 (>= 2.34),\n libcurl3-gnutls (>= 7.56.1),\n\tperl\n" +
		"Description: fast, scalable, distributed revision control system\n" + " " + long + "\n .\n more\n" +
		"\n\n" +
		"package: ca-certificates\n" +
		"VERSION: 20230311\n" +
		"Architecture: all\n" +
		"Pre-Depends: debconf (>= 0.5) | debconf-2.0\n" +
		"Provides: certs\n" +
		"X-Long: " + long + "\n" +
		"   \n" +
		"Package: mawk\nVersion: 1.3.4.20200120-3.1\nArchitecture: amd64\nProvides: awk"
	got, err := ParsePackages(strings.NewReader(in), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := []Package{
		{Name: "git", Version: "1:2.39.5-0+deb12u2", Architecture: "amd64",
			Depends: "libc6 (>= 2.34), libcurl3-gnutls (>= 7.56.1), perl"},
		{Name: "ca-certificates", Version: "20230311", Architecture: "all",
			PreDepends: "debconf (>= 0.5) | debconf-2.0", Provides: "certs"},
		{Name: "mawk", Version: "1.3.4.20200120-3.1", Architecture: "amd64", Provides: "awk"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestParsePackagesErrors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"no version", "Package: git\nArchitecture: amd64\n\nPackage: x\n", `line 1: stanza of package "git" has no Version`},
		{"no package", "Version: 1.0\n", `line 1: stanza has no Package`},
		{"bad name", "Package: Git\nVersion: 1.0\n", `line 1: invalid package name "Git"`},
		{"bad version", "Package: git\nVersion: v1\n", `line 1: package "git" has an invalid Version "v1"`},
		{"nul", "Package: git\nVersion: 1.0\x00\n", `line 2: NUL byte`},
		{"orphan continuation", " foo\n", `line 1: continuation line outside a field`},
		{"no colon", "Package: git\ngarbage\n", `line 2: not a "Field: value" line`},
		{"empty field name", ": x\n", `line 1: not a "Field: value" line`},
		{"duplicate", "Package: git\nPackage: git\nVersion: 1\n", `line 2: duplicate field "Package"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePackages(strings.NewReader(c.in), 1<<20)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestParsePackagesSizeBound(t *testing.T) {
	in := "Package: git\nVersion: 1.0\nDescription: " + strings.Repeat("x", 5000) + "\n"
	_, err := ParsePackages(strings.NewReader(in), 4096)
	if !errors.Is(err, ErrIndexTooLarge) {
		t.Fatalf("error %v, want ErrIndexTooLarge", err)
	}
	if !strings.Contains(err.Error(), "4096 bytes") {
		t.Errorf("error %q does not name the bound", err)
	}
	if _, err := ParsePackages(strings.NewReader(in), int64(len(in))); err != nil {
		t.Errorf("an index of exactly the bound: %v", err)
	}
}

func FuzzParsePackages(f *testing.F) {
	f.Add("Package: git\nVersion: 1.0\nDepends: a | b (>= 1), c:any\n\n")
	f.Add("Package: git\n \n\x00\n")
	f.Add(":\n\n \t\n")
	f.Fuzz(func(t *testing.T, in string) {
		pkgs, err := ParsePackages(strings.NewReader(in), 1<<16)
		if err != nil {
			return
		}
		for _, p := range pkgs {
			if !ValidPackageName(p.Name) || !ValidVersion(p.Version) {
				t.Errorf("accepted %+v", p)
			}
			relations(p.Depends)
		}
	})
}
