package npm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func deps(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// treeRegistry is the shape of a real agent CLI's tree in small: a nested
// conflict, an alias, a platform-only optional dependency, a peer, a tag,
// a prerelease and a deprecated version that must not be picked.
func treeRegistry(t testing.TB) *fakeRegistry {
	f := newFakeRegistry()
	f.add(t, "@acme/cli", "1.0.0", Manifest{
		Dependencies:         deps("a", "^1.0.0", "b", "~2.1.0", "a-alias", "npm:a@^1.0.0", "tagged", "next", "plug", "^1"),
		OptionalDependencies: deps("@acme/cli-win32", "1.0.0"),
		Bin:                  json.RawMessage(`{"acme":"index.js"}`),
	})
	f.add(t, "a", "1.0.0", Manifest{Dependencies: deps("b", "^1.0.0")})
	f.add(t, "a", "1.1.0", Manifest{Dependencies: deps("b", "^1.0.0")})
	f.add(t, "a", "2.0.0-beta.1", Manifest{})
	f.add(t, "b", "1.0.0", Manifest{})
	f.add(t, "b", "1.2.0", Manifest{})
	f.add(t, "b", "2.1.0", Manifest{})
	f.add(t, "b", "2.1.3", Manifest{Deprecated: json.RawMessage(`"do not use"`)})
	f.add(t, "b", "2.1.2", Manifest{})
	f.add(t, "b", "2.2.0", Manifest{})
	f.add(t, "tagged", "3.0.0", Manifest{})
	f.add(t, "tagged", "4.0.0-rc.1", Manifest{})
	f.docs["tagged"].DistTags["next"] = "4.0.0-rc.1"
	f.add(t, "plug", "1.5.0", Manifest{PeerDependencies: deps("host", ">=2", "maybe", "*"),
		PeerDependenciesMeta: map[string]peerMeta{"maybe": {Optional: true}}})
	f.add(t, "host", "2.0.0", Manifest{Dependencies: deps("plug", "^1")}) // a cycle
	f.add(t, "@acme/cli-win32", "1.0.0", Manifest{OS: []string{"win32"}, CPU: []string{"x64"}})
	return f
}

func TestResolveTree(t *testing.T) {
	f := treeRegistry(t)
	tree, err := Resolve(context.Background(), f, "@acme/cli", "1.0.0", Platform{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"node_modules/@acme/cli":              "1.0.0",
		"node_modules/a":                      "1.1.0", // latest, in range
		"node_modules/a-alias":                "1.1.0",
		"node_modules/b":                      "2.1.2", // 2.1.3 is deprecated
		"node_modules/a/node_modules/b":       "1.2.0",
		"node_modules/a-alias/node_modules/b": "1.2.0",
		"node_modules/tagged":                 "4.0.0-rc.1",
		"node_modules/plug":                   "1.5.0",
		"node_modules/host":                   "2.0.0",
		"node_modules/@acme/cli-win32":        "1.0.0",
	}
	for p, v := range want {
		if got := tree.Packages[p].Version; got != v {
			t.Errorf("%s: version %q, want %q", p, got, v)
		}
	}
	for p := range tree.Packages {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected package %s@%s", p, tree.Packages[p].Version)
		}
	}
	if e := tree.Packages["node_modules/a-alias"]; e.Name != "a" {
		t.Errorf("the alias does not name its package: %+v", e)
	}
	if e := tree.Packages["node_modules/@acme/cli-win32"]; !e.Optional || e.OS[0] != "win32" {
		t.Errorf("the platform package is not optional with its os: %+v", e)
	}
	if tree.Packages["node_modules/a"].Optional || tree.Packages["node_modules/host"].Optional {
		t.Error("a required package is marked optional")
	}
	if e := tree.Packages["node_modules/plug"]; len(e.OptionalPeers) != 1 || e.OptionalPeers[0] != "maybe" {
		t.Errorf("optional peers: %+v", e.OptionalPeers)
	}
	if e := tree.Packages["node_modules/@acme/cli"]; e.Bin["acme"] != "index.js" || !strings.HasPrefix(e.Integrity, "sha512-") {
		t.Errorf("the CLI's entry: %+v", e)
	}
	for name, n := range f.fetches {
		if n != 1 {
			t.Errorf("%s fetched %d times", name, n)
		}
	}
}

func TestResolveRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Manifest
		want string
	}{
		{"git", Manifest{Dependencies: deps("x", "git+https://example.test/x.git")}, "not a registry version range"},
		{"github", Manifest{Dependencies: deps("x", "owner/x")}, "not a registry version range"},
		{"file", Manifest{Dependencies: deps("x", "file:../x")}, "not a registry version range"},
		{"missing", Manifest{Dependencies: deps("nope", "^1")}, `"nope" not found`},
		{"no version", Manifest{Dependencies: deps("a", "^9")}, "no version of a satisfies"},
		{"prerelease only", Manifest{Dependencies: deps("a", "^2.0.0")}, "no version of a satisfies"},
		{"bundled", Manifest{Dependencies: deps("bundler", "1")}, "ships its own dependencies"},
		{"bad name", Manifest{Dependencies: deps("../x", "1")}, "not a valid npm package name"},
		{"peer conflict", Manifest{Dependencies: deps("b", "2.2.0", "needs-b1", "1")}, "peer dependency b@"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRegistry()
			f.add(t, "root", "1.0.0", tc.m)
			f.add(t, "a", "1.0.0", Manifest{})
			f.add(t, "a", "2.0.0-rc.1", Manifest{})
			f.add(t, "b", "2.2.0", Manifest{})
			f.add(t, "b", "1.0.0", Manifest{})
			f.add(t, "needs-b1", "1.0.0", Manifest{PeerDependencies: deps("b", "^1")})
			f.add(t, "bundler", "1.0.0", Manifest{BundleDependencies: json.RawMessage(`["a"]`)})
			_, err := Resolve(context.Background(), f, "root", "1.0.0", Platform{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "root@1.0.0") {
				t.Errorf("the error does not say which package wants it: %v", err)
			}
		})
	}
}

func TestTreeCheckRefusesHostileEntries(t *testing.T) {
	good, err := Resolve(context.Background(), treeRegistry(t), "@acme/cli", "1.0.0", Platform{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(t *Tree)
	}{
		{"traversal path", func(t *Tree) { t.Packages["node_modules/../../etc"] = t.Packages["node_modules/a"] }},
		{"orphan nested", func(t *Tree) { t.Packages["node_modules/zz/node_modules/a"] = t.Packages["node_modules/a"] }},
		{"bad integrity", func(t *Tree) {
			e := t.Packages["node_modules/a"]
			e.Integrity = "sha512-short"
			t.Packages["node_modules/a"] = e
		}},
		{"range", func(t *Tree) {
			e := t.Packages["node_modules/a"]
			e.Dependencies = deps("b", "^1\"; rm -rf /")
			t.Packages["node_modules/a"] = e
		}},
		{"absolute bin", func(t *Tree) {
			e := t.Packages["node_modules/a"]
			e.Bin = deps("x", "/bin/sh")
			t.Packages["node_modules/a"] = e
		}},
		{"platform", func(t *Tree) {
			e := t.Packages["node_modules/a"]
			e.OS = []string{"linux\nx"}
			t.Packages["node_modules/a"] = e
		}},
		{"no top", func(t *Tree) { delete(t.Packages, "node_modules/@acme/cli") }},
		{"version", func(t *Tree) { e := t.Packages["node_modules/a"]; e.Version = "1.0"; t.Packages["node_modules/a"] = e }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := &Tree{Name: good.Name, Version: good.Version, Packages: map[string]Entry{}}
			for k, v := range good.Packages {
				bad.Packages[k] = v
			}
			tc.edit(bad)
			if err := bad.Check(); err == nil {
				t.Fatal("Check accepted it")
			}
		})
	}
}
