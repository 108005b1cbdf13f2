package npm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ProjectName is the name of the generated project that installs the CLI.
const ProjectName = "agentbox-agent-cli"

// Check validates a tree read from a lock or resolved from a registry:
// every path is a chain of node_modules/NAME below another entry, every
// version, integrity, range, executable and platform entry well formed.
func (t *Tree) Check() error {
	if !ValidName(t.Name) {
		return fmt.Errorf("invalid npm package name %q", t.Name)
	}
	if len(t.Packages) > MaxPackages {
		return fmt.Errorf("%d packages: at most %d", len(t.Packages), MaxPackages)
	}
	top, ok := t.Packages["node_modules/"+t.Name]
	if !ok || top.Version != t.Version || top.Name != "" {
		return fmt.Errorf("the tree has no entry node_modules/%s at version %s", t.Name, t.Version)
	}
	for _, p := range slices.Sorted(maps.Keys(t.Packages)) {
		if err := t.checkEntry(p, t.Packages[p]); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

func (t *Tree) checkEntry(p string, e Entry) error {
	key := p[strings.LastIndex(p, "node_modules/")+len("node_modules/"):]
	if !strings.HasPrefix(p, "node_modules/") || !ValidName(key) || (e.Name != "" && !ValidName(e.Name)) {
		return fmt.Errorf("not a path of the form node_modules/NAME[/node_modules/NAME...]")
	}
	if parent := parentDir(p); parent != "" {
		if _, ok := t.Packages[parent]; !ok || parent+"/node_modules/"+key != p {
			return fmt.Errorf("not below another package of the tree")
		}
	}
	if _, err := ParseVersion(e.Version); err != nil || !ValidVersion(e.Version) {
		return fmt.Errorf("invalid version %q", e.Version)
	}
	if !ValidIntegrity(e.Integrity) {
		return fmt.Errorf("invalid integrity %q: want sha512-<base64> (or sha1-, sha256-, sha384-)", e.Integrity)
	}
	for _, deps := range []map[string]string{e.Dependencies, e.OptionalDependencies, e.PeerDependencies} {
		for k, v := range deps {
			if !ValidName(k) || !ValidSpec(v) {
				return fmt.Errorf("invalid dependency %q: %q", k, v)
			}
		}
	}
	for _, k := range e.OptionalPeers {
		if _, ok := e.PeerDependencies[k]; !ok {
			return fmt.Errorf("optional peer %q is not a peer dependency", k)
		}
	}
	for k, v := range e.Bin {
		if !ValidBin(k, v) {
			return fmt.Errorf("invalid executable %q: %q", k, v)
		}
	}
	for _, list := range [][]string{e.OS, e.CPU, e.Libc} {
		if len(list) > 64 {
			return fmt.Errorf("more than 64 platform entries")
		}
		for _, s := range list {
			if !ValidPlatformToken(s) {
				return fmt.Errorf("invalid platform entry %q", s)
			}
		}
	}
	return nil
}

// PackageJSON renders the project that depends on the CLI alone; header
// (a generated-file notice) is its first key, "//", which npm ignores.
func (t *Tree) PackageJSON(header string) []byte {
	return marshal(map[string]any{
		"//":           header,
		"name":         ProjectName,
		"private":      true,
		"dependencies": map[string]string{t.Name: t.Version},
	})
}

type lockEntry struct {
	Name                 string                     `json:"name,omitempty"`
	Version              string                     `json:"version,omitempty"`
	Integrity            string                     `json:"integrity,omitempty"`
	Optional             bool                       `json:"optional,omitempty"`
	HasInstallScript     bool                       `json:"hasInstallScript,omitempty"`
	Dependencies         map[string]string          `json:"dependencies,omitempty"`
	OptionalDependencies map[string]string          `json:"optionalDependencies,omitempty"`
	PeerDependencies     map[string]string          `json:"peerDependencies,omitempty"`
	PeerDependenciesMeta map[string]map[string]bool `json:"peerDependenciesMeta,omitempty"`
	Bin                  map[string]string          `json:"bin,omitempty"`
	OS                   []string                   `json:"os,omitempty"`
	CPU                  []string                   `json:"cpu,omitempty"`
	Libc                 []string                   `json:"libc,omitempty"`
}

// PackageLock renders npm's package-lock.json (version 3) of the tree.
// Entries carry no "resolved" URL: npm ci fetches each name@version from
// the registry it is configured with and checks the tarball against the
// integrity, so the same lock works through any mirror of the registry.
func (t *Tree) PackageLock(header string) []byte {
	pkgs := map[string]lockEntry{"": {Name: ProjectName, Dependencies: map[string]string{t.Name: t.Version}}}
	for p, e := range t.Packages {
		le := lockEntry{
			Name: e.Name, Version: e.Version, Integrity: e.Integrity, Optional: e.Optional,
			HasInstallScript: e.HasInstallScript, Dependencies: e.Dependencies,
			OptionalDependencies: e.OptionalDependencies, PeerDependencies: e.PeerDependencies,
			Bin: e.Bin, OS: e.OS, CPU: e.CPU, Libc: e.Libc,
		}
		for _, k := range e.OptionalPeers {
			if le.PeerDependenciesMeta == nil {
				le.PeerDependenciesMeta = map[string]map[string]bool{}
			}
			le.PeerDependenciesMeta[k] = map[string]bool{"optional": true}
		}
		pkgs[p] = le
	}
	return marshal(map[string]any{
		"//":              header,
		"name":            ProjectName,
		"lockfileVersion": 3,
		"requires":        true,
		"packages":        pkgs,
	})
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // maps of strings and plain structs always encode
	}
	return b.Bytes()
}
