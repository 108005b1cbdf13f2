package npm

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// nativeRegistry is a CLI with a native binary per platform, as Claude
// Code, Codex (aliases of its own prerelease versions), OpenCode and
// Copilot publish them.
func nativeRegistry(t testing.TB) *fakeRegistry {
	f := newFakeRegistry()
	f.add(t, "@acme/cli", "1.0.0", Manifest{
		Dependencies: deps("anywhere", "^1"),
		OptionalDependencies: deps(
			"@acme/cli-linux-x64", "1.0.0", "@acme/cli-linux-x64-musl", "1.0.0",
			"@acme/cli-linux-arm64", "1.0.0", "@acme/cli-darwin-arm64", "1.0.0",
			"@acme/cli-win32-x64", "1.0.0", "not-windows", "^1", "ia32-only", "^1",
			"@acme/cli-linux-arm64-musl", "npm:@acme/cli@1.0.0-linux-arm64-musl",
			"@acme/cli-linux-arm64-gnu", "npm:@acme/cli@1.0.0-linux-arm64", "gone", "1.0.0", "anywhere-else", "npm:anywhere@^9"),
	})
	native := func(name, version, os, cpu, libc string, m Manifest) {
		m.OS, m.CPU = StringList{os}, StringList{cpu}
		if libc != "" {
			m.Libc = StringList{libc}
		}
		f.add(t, name, version, m)
	}
	native("@acme/cli-linux-x64", "1.0.0", "linux", "x64", "glibc", Manifest{})
	native("@acme/cli-linux-x64-musl", "1.0.0", "linux", "x64", "musl", Manifest{Dependencies: deps("musl-helper", "^1")})
	native("@acme/cli-linux-arm64", "1.0.0", "linux", "arm64", "glibc", Manifest{})
	native("@acme/cli-darwin-arm64", "1.0.0", "darwin", "arm64", "", Manifest{})
	native("@acme/cli-win32-x64", "1.0.0", "win32", "x64", "", Manifest{})
	native("@acme/cli", "1.0.0-linux-arm64-musl", "linux", "arm64", "musl", Manifest{})
	native("@acme/cli", "1.0.0-linux-arm64", "linux", "arm64", "", Manifest{})
	f.add(t, "not-windows", "1.0.0", Manifest{OS: StringList{"!win32"}})
	f.add(t, "ia32-only", "1.0.0", Manifest{CPU: StringList{"ia32"}})
	f.add(t, "musl-helper", "1.0.0", Manifest{})
	f.add(t, "anywhere", "1.0.0", Manifest{})
	return f
}

// TestResolveKeepsTheImagesPlatforms: the lock keeps only the optional
// packages that fit Linux on the image's CPUs with glibc, aliases
// included, and the CLI's entry names only those; an optional package the
// registry does not have, or has in no version in range, is left out and
// listed.
func TestResolveKeepsTheImagesPlatforms(t *testing.T) {
	tree, err := Resolve(context.Background(), nativeRegistry(t), "@acme/cli", "1.0.0", ImagePlatform)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"node_modules/@acme/cli", "node_modules/@acme/cli-linux-arm64", "node_modules/@acme/cli-linux-arm64-gnu",
		"node_modules/@acme/cli-linux-x64", "node_modules/anywhere", "node_modules/not-windows"}
	if got := slices.Sorted(maps.Keys(tree.Packages)); !slices.Equal(got, want) {
		t.Errorf("packages:\n got %q\nwant %q", got, want)
	}
	if want := []string{"anywhere@^9 (optional, of @acme/cli@1.0.0): no version in range in the registry",
		"gone@1.0.0 (optional, of @acme/cli@1.0.0): not in the registry"}; !slices.Equal(tree.Missing, want) {
		t.Errorf("missing: %q, want %q", tree.Missing, want)
	}
	cli := tree.Packages["node_modules/@acme/cli"]
	wantOpt := []string{"@acme/cli-linux-arm64", "@acme/cli-linux-arm64-gnu", "@acme/cli-linux-x64", "not-windows"}
	if got := slices.Sorted(maps.Keys(cli.OptionalDependencies)); !slices.Equal(got, wantOpt) {
		t.Errorf("the CLI's optional dependencies:\n got %q\nwant %q", got, wantOpt)
	}
	// Every platform: nothing is left out.
	all, err := Resolve(context.Background(), nativeRegistry(t), "@acme/cli", "1.0.0", Platform{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Packages) != 12 {
		t.Errorf("every platform: %d packages, want 12: %q", len(all.Packages), slices.Sorted(maps.Keys(all.Packages)))
	}
}

// TestNPMCIInstallsAPlatformLock: npm ci takes the lock without the other
// platforms' packages as it is (nothing missing, nothing re-resolved) and
// installs the package of its own CPU.
func TestNPMCIInstallsAPlatformLock(t *testing.T) {
	f := nativeRegistry(t)
	tree, err := Resolve(context.Background(), f, "@acme/cli", "1.0.0", ImagePlatform)
	if err != nil {
		t.Fatal(err)
	}
	srv := f.serve(t)
	dir, out, err := npmCI(t, tree, srv.URL)
	if err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	for _, p := range []string{"node_modules/anywhere", "node_modules/not-windows"} {
		if _, err := os.Stat(filepath.Join(dir, p, "package.json")); err != nil {
			t.Errorf("%s is not installed: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@acme/cli-linux-x64-musl")); err == nil {
		t.Error("the musl package was installed")
	}
}

// TestPlatformFits follows npm-install-checks' checkPlatform.
func TestPlatformFits(t *testing.T) {
	for _, tc := range []struct {
		os, cpu, libc []string
		want          bool
	}{
		{nil, nil, nil, true},
		{[]string{"linux"}, []string{"arm64"}, nil, true},
		{[]string{"linux"}, []string{"ia32"}, nil, false},
		{[]string{"any"}, []string{"any"}, []string{"any"}, true},
		{[]string{"!win32", "!darwin"}, nil, nil, true},
		{[]string{"!linux"}, nil, nil, false},
		{[]string{"linux", "!linux"}, nil, nil, false},
		{[]string{"darwin"}, nil, nil, false},
		{nil, []string{"!x64"}, nil, true}, // arm64 fits
		{nil, []string{"!x64", "!arm64"}, nil, false},
		{[]string{"linux"}, []string{"x64"}, []string{"musl"}, false},
		{[]string{"linux"}, []string{"x64"}, []string{"glibc"}, true},
		{nil, nil, []string{"!musl"}, true},
	} {
		m := &Manifest{OS: tc.os, CPU: tc.cpu, Libc: tc.libc}
		if got := ImagePlatform.Fits(m); got != tc.want {
			t.Errorf("os %q cpu %q libc %q: fits %v, want %v", tc.os, tc.cpu, tc.libc, got, tc.want)
		}
	}
	if !(Platform{}).Fits(&Manifest{OS: StringList{"win32"}, Libc: StringList{"musl"}}) {
		t.Error("the zero Platform refuses a package")
	}
	if !(Platform{OS: "darwin", Libc: "glibc"}).Fits(&Manifest{Libc: StringList{"musl"}}) {
		t.Error("libc is checked off linux")
	}
}
