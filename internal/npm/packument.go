// Package npm reads an npm registry (Client, configured by the caller: the
// package reads no environment; RegistryFromConfig follows .npmrc with the
// getenv it is given), resolves a package's whole dependency tree from it,
// and renders the package-lock.json that `npm ci` installs with every
// tarball checked against its integrity.
package npm

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Packument is an npm registry's document for one package, as much as a
// lock needs. A registry may answer in the abbreviated form
// ("application/vnd.npm.install-v1+json", which says hasInstallScript) or
// the full one (each version's whole package.json, with its scripts), as
// mirrors do; npm takes either, and so does Manifest.
type Packument struct {
	Name     string              `json:"name"`
	DistTags map[string]string   `json:"dist-tags"`
	Versions map[string]Manifest `json:"versions"`
}

// Manifest is one version of a package.
type Manifest struct {
	Name                 string              `json:"name"`
	Version              string              `json:"version"`
	Dependencies         map[string]string   `json:"dependencies"`
	OptionalDependencies map[string]string   `json:"optionalDependencies"`
	PeerDependencies     map[string]string   `json:"peerDependencies"`
	PeerDependenciesMeta map[string]peerMeta `json:"peerDependenciesMeta"`
	BundleDependencies   json.RawMessage     `json:"bundleDependencies"`
	BundledDependencies  json.RawMessage     `json:"bundledDependencies"`
	Bin                  json.RawMessage     `json:"bin"`
	OS                   StringList          `json:"os"`
	CPU                  StringList          `json:"cpu"`
	Libc                 StringList          `json:"libc"`
	Engines              json.RawMessage     `json:"engines"`
	HasInstallScript     bool                `json:"hasInstallScript"` // the abbreviated form's
	Scripts              map[string]any      `json:"scripts"`          // the full form's
	HasShrinkwrap        bool                `json:"_hasShrinkwrap"`
	Deprecated           json.RawMessage     `json:"deprecated"`
	Dist                 Dist                `json:"dist"`
}

// StringList is a list of strings that package.json may also write as one
// string ("os": "linux").
type StringList []string

// UnmarshalJSON accepts a string or a list of strings; null or "" is no
// list.
func (l *StringList) UnmarshalJSON(b []byte) error {
	var one string
	if string(b) == "null" || json.Unmarshal(b, &one) == nil && one == "" {
		*l = nil
		return nil
	}
	if json.Unmarshal(b, &one) == nil {
		*l = StringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*l = many
	return nil
}

// installScript reports whether npm runs a script of the package when it
// installs it: the abbreviated form says so in hasInstallScript, the full
// form lists the scripts, of which preinstall, install and postinstall
// count, as in npm's own Node.hasInstallScript. A package with a
// binding.gyp and neither install nor preinstall gets "node-gyp rebuild" as
// its install script when npm publishes it (so both forms carry it); one
// published otherwise has none in either form, and npm ci finds its
// binding.gyp on disk at install time whatever the lock says.
func (m *Manifest) installScript() bool {
	if m.HasInstallScript {
		return true
	}
	for _, k := range []string{"preinstall", "install", "postinstall"} {
		if truthy(m.Scripts[k]) {
			return true
		}
	}
	return false
}

// truthy is JavaScript's truthiness of a decoded JSON value.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return v != ""
	case bool:
		return v
	case float64:
		return v != 0
	}
	return true
}

// NodeEngine returns the version's engines.node range, "" when it declares
// none (or declares engines in a form npm ignores).
func (m *Manifest) NodeEngine() string {
	var e map[string]any
	if json.Unmarshal(m.Engines, &e) != nil {
		return ""
	}
	s, _ := e["node"].(string)
	return strings.TrimSpace(s)
}

// Dist describes a version's tarball.
type Dist struct {
	Integrity string `json:"integrity,omitempty"`
	Shasum    string `json:"shasum,omitempty"`
}

type peerMeta struct {
	Optional bool `json:"optional"`
}

// ParsePackument decodes a registry's package document.
func ParsePackument(name string, body []byte) (*Packument, error) {
	var p Packument
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("the package document of %q is not valid json: %w", name, err)
	}
	if p.Name != "" && p.Name != name {
		return nil, fmt.Errorf("the registry answered for %q with the document of %q", name, p.Name)
	}
	return &p, nil
}

// deprecated reports whether the version is marked deprecated (a non-empty
// message; npm unpublishes the mark with "" or false).
func (m *Manifest) deprecated() bool {
	var s string
	if json.Unmarshal(m.Deprecated, &s) == nil {
		return s != ""
	}
	var b bool
	return json.Unmarshal(m.Deprecated, &b) == nil && b
}

// bundles reports whether the package ships dependencies in its tarball.
func (m *Manifest) bundles() bool {
	for _, raw := range []json.RawMessage{m.BundleDependencies, m.BundledDependencies} {
		var list []string
		var all bool
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 || json.Unmarshal(raw, &all) == nil && all {
			return true
		}
	}
	return false
}

// bins returns the package's executables, name -> path in the package; a
// string "bin" names the executable after the package (without its scope).
func (m *Manifest) bins() (map[string]string, error) {
	if len(m.Bin) == 0 || string(m.Bin) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(m.Bin, &one) == nil {
		return map[string]string{path.Base(m.Name): one}, nil
	}
	var many map[string]string
	if err := json.Unmarshal(m.Bin, &many); err != nil {
		return nil, fmt.Errorf("%s@%s: \"bin\" is neither a string nor a map of strings", m.Name, m.Version)
	}
	if len(many) == 0 {
		return nil, nil
	}
	return many, nil
}

// integrity returns the tarball's Subresource Integrity string: the
// registry's sha512 (or other) integrity, else its sha1 shasum in SRI form.
func (m *Manifest) integrity() (string, error) {
	if i := strings.TrimSpace(m.Dist.Integrity); i != "" {
		// Several hashes may be listed; keep the strongest that npm checks.
		fields := strings.Fields(i)
		slices.SortFunc(fields, func(a, b string) int { return strength(b) - strength(a) })
		if ValidIntegrity(fields[0]) {
			return fields[0], nil
		}
		return "", fmt.Errorf("%s@%s: the registry's integrity %q is not sha512-, sha384-, sha256- or sha1-<base64>", m.Name, m.Version, i)
	}
	if sri, ok := shasumSRI(m.Dist.Shasum); ok {
		return sri, nil
	}
	return "", fmt.Errorf("%s@%s: the registry gives no integrity and no shasum for its tarball", m.Name, m.Version)
}

func strength(sri string) int {
	for i, p := range []string{"sha1-", "sha256-", "sha384-", "sha512-"} {
		if strings.HasPrefix(sri, p) {
			return i + 1
		}
	}
	return 0
}
