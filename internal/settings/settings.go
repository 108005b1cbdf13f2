// Package settings reads the user's own agentbox settings: how this
// machine reaches what builds and bump need (a copy of Debian's archive,
// an npm registry, image registry mirrors, a TLS-intercepting proxy's CA).
// They live in one file outside every repository,
// $XDG_CONFIG_HOME/agentbox/settings.yaml, because they describe the
// user's network, not the project: two people behind different mirrors
// review the same generated files. Environment variables override the
// file, one by one.
package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// FileName is the settings file's name in agentbox's configuration
// directory.
const FileName = "settings.yaml"

// The environment variables that override the file's settings.
const (
	EnvDebianArchive  = "AGENTBOX_DEBIAN_ARCHIVE"
	EnvDebianLayout   = "AGENTBOX_DEBIAN_LAYOUT"
	EnvDebianSecurity = "AGENTBOX_DEBIAN_SECURITY"
	EnvNPMRegistry    = "NPM_CONFIG_REGISTRY"
	EnvRegistryMirror = "AGENTBOX_REGISTRY_MIRRORS" // comma-separated
	EnvCACertificates = "AGENTBOX_CA_CERTIFICATES"  // comma-separated paths
)

// The layouts of a copy of Debian's archive.
const (
	// LayoutSnapshot is the layout of Debian's snapshot service:
	// <archive>/debian/<timestamp>/ and <archive>/debian-security/<timestamp>/.
	LayoutSnapshot = debian.LayoutSnapshot
	// LayoutPlain is a plain mirror: <archive>/dists/<release>/ (and the
	// security archive at its own address).
	LayoutPlain = debian.LayoutPlain
)

// Settings are one user's settings. The zero value means "none": Debian's
// snapshot service, npm's own registry configuration, Docker's own.
type Settings struct {
	Debian         Debian     `yaml:"debian"`
	NPM            NPM        `yaml:"npm"`
	Registries     Registries `yaml:"registries"`
	CACertificates []string   `yaml:"ca_certificates"`

	// File is the settings file the values were read from ("" when
	// there was none); Sources names, per key path, where each set value
	// came from: the file ("settings.yaml:3:12") or an environment
	// variable.
	File    string            `yaml:"-"`
	Sources map[string]string `yaml:"-"`

	// caRead says that LoadUser read ca_certificates into caPEM.
	caRead bool
	caPEM  []byte
}

// Debian is the copy of Debian's archive that builds and bump use.
type Debian struct {
	// Archive is the copy's base URL ("" for Debian's snapshot service).
	Archive string `yaml:"archive"`
	// Layout is LayoutSnapshot (the default) or LayoutPlain.
	Layout string `yaml:"layout"`
	// Security is a plain mirror's security archive (LayoutPlain only).
	Security string `yaml:"security"`
}

// NPM is the npm registry that builds and bump use.
type NPM struct {
	// Registry is the registry's URL ("" for npm's own configuration).
	Registry string `yaml:"registry"`
}

// Registries are image registry settings.
type Registries struct {
	// Mirrors are mirrors of Docker Hub, asked first, in order.
	Mirrors []string `yaml:"mirrors"`
}

// Path is this user's settings file: $XDG_CONFIG_HOME/agentbox/settings.yaml
// (~/.config/agentbox/settings.yaml when XDG_CONFIG_HOME is not set, on
// macOS ~/Library/Application Support/agentbox/settings.yaml); "" without
// a home directory.
func Path() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "agentbox", FileName)
}

// Load reads the settings file at path (none if path is "" or the file
// does not exist), then applies the environment's overrides. Errors name
// the file, line and column, or the variable.
func Load(path string, getenv func(string) string) (Settings, error) {
	s := Settings{Sources: map[string]string{}}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return Settings{}, fmt.Errorf("agentbox settings: %w", err)
		default:
			pos, err := yamlpos.Decode(path, data, &s)
			if err != nil {
				return Settings{}, err
			}
			s.File = path
			for key, p := range pos {
				s.Sources[key] = fmt.Sprintf("%s:%d:%d", path, p.Line, p.Col)
			}
		}
	}
	override := func(key, env string, set func(string)) {
		if v := strings.TrimSpace(getenv(env)); v != "" {
			set(v)
			s.Sources[key] = "$" + env
		}
	}
	override("debian.archive", EnvDebianArchive, func(v string) { s.Debian.Archive = v })
	override("debian.layout", EnvDebianLayout, func(v string) { s.Debian.Layout = v })
	override("debian.security", EnvDebianSecurity, func(v string) { s.Debian.Security = v })
	override("npm.registry", EnvNPMRegistry, func(v string) { s.NPM.Registry = v })
	override("registries.mirrors", EnvRegistryMirror, func(v string) { s.Registries.Mirrors = splitList(v) })
	override("ca_certificates", EnvCACertificates, func(v string) { s.CACertificates = splitList(v) })
	if err := s.check(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// check refuses values no build could use, naming where each came from.
func (s *Settings) check() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s: %s", s.source(key), key, fmt.Sprintf(format, args...)))
	}
	// What builds fetch from: a build container reaches no loopback of
	// the host's.
	checkURL := func(key, v string) {
		if v == "" {
			return
		}
		if err := notLoopback(v); err != nil {
			bad(key, "%v", err)
		} else if err := httpURL(v); err != nil {
			bad(key, "%v", err)
		}
	}
	checkURL("debian.archive", s.Debian.Archive)
	checkURL("debian.security", s.Debian.Security)
	checkURL("npm.registry", s.NPM.Registry)
	switch s.Debian.Layout {
	case "", LayoutSnapshot:
		if s.Debian.Security != "" {
			bad("debian.security", "is for a plain mirror (layout: plain); a snapshot copy holds debian-security itself")
		}
	case LayoutPlain:
		if s.Debian.Archive == "" {
			bad("debian.layout", "plain needs debian.archive, the plain mirror's URL")
		}
		if s.Debian.Security == "" {
			bad("debian.layout", "plain needs debian.security too, the URL of a plain mirror of Debian's security archive (debian-security): without it builds would miss every security fix")
		}
	default:
		bad("debian.layout", "%q is not a layout: want %q or %q", s.Debian.Layout, LayoutSnapshot, LayoutPlain)
	}
	for i, m := range s.Registries.Mirrors {
		key := fmt.Sprintf("registries.mirrors[%d]", i)
		if err := httpURL(m); err != nil {
			bad(key, "%v", err)
		} else if u, _ := url.Parse(m); u.Path != "" && u.Path != "/" || u.User != nil {
			bad(key, "%q: a registry mirror is scheme://host[:port], as in Docker's registry-mirrors (it serves Docker Hub's repositories at its root)", m)
		}
	}
	for i, c := range s.CACertificates {
		key := fmt.Sprintf("ca_certificates[%d]", i)
		if !filepath.IsAbs(c) {
			bad(key, "%q is not an absolute path", c)
		}
	}
	return errors.Join(errs...)
}

// source says where the value at key came from, for an error.
func (s *Settings) source(key string) string {
	if src, ok := s.Sources[key]; ok {
		return src
	}
	if i := strings.IndexByte(key, '['); i > 0 {
		if src, ok := s.Sources[key[:i]]; ok {
			return src
		}
	}
	if s.File != "" {
		return s.File
	}
	return "agentbox settings"
}

// httpURL refuses what is not an http:// or https:// URL with a host and
// nothing after the path, or holds a character no archive's URL needs (the
// value reaches a shell in the Dockerfiles).
func httpURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", v)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q has a query or fragment; give the base URL", v)
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._~:/%@+-", r)) {
			return fmt.Errorf("%q holds %q, which no URL of an archive or registry needs", v, r)
		}
	}
	return nil
}

// notLoopback refuses a URL whose host is a loopback name or address (or
// the unspecified address, which a client connects to on its own
// loopback): builds run in containers whose loopback is their own, so a
// mirror there answers bump but never a build.
func notLoopback(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return nil // httpURL says what is wrong
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	loop := host == "localhost" || strings.HasSuffix(host, ".localhost")
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		loop = ip.IsLoopback() || ip.IsUnspecified()
	}
	if !loop {
		return nil
	}
	alt := *u
	alt.Host = "172.17.0.1"
	if p := u.Port(); p != "" {
		alt.Host += ":" + p
	}
	return fmt.Errorf("%q is on loopback, which a build container cannot reach (its loopback is its own): "+
		"serve the mirror on an address of the host that containers reach and name that: on Linux Docker's bridge "+
		"(docker0, usually %s; see ip -4 addr show docker0), with Docker Desktop host.docker.internal", v, alt.String())
}

// BuildEnv is what docker compose needs in its environment for builds to
// use these settings: the variables the compose file passes to the
// Dockerfiles as build arguments. The environment's own values already
// are the settings (Load read them); an empty one is unset.
func (s Settings) BuildEnv(environ []string) []string {
	vars := map[string]string{
		EnvDebianArchive:  s.Debian.Archive,
		EnvDebianLayout:   s.Debian.Layout,
		EnvDebianSecurity: s.Debian.Security,
		EnvNPMRegistry:    s.NPM.Registry,
	}
	return setVars(environ, vars)
}

// setVars is environ with vars set: every variable of vars dropped from
// it, then those with a value appended, in the order of their names.
func setVars(environ []string, vars map[string]string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := vars[k]; !ours {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if v := vars[k]; v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}
