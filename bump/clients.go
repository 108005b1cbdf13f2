package bump

import (
	"net/http"

	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// Registry resolves image tags and reads an image's os-release.
type Registry interface {
	images.Resolver
	images.OSReleaser
}

// NewRegistry is the image registry of a bump: Docker Hub's images through
// RegistryMirrors of the settings and of the Docker daemon (daemonMirrors,
// which the caller asked docker for), over the settings' transport.
func NewRegistry(s settings.Settings, daemonMirrors []string) Registry {
	return images.NewRegistryResolver(images.RegistryOptions{Mirrors: RegistryMirrors(s, daemonMirrors), Transport: transport(s)})
}

// RegistryMirrors are the Docker Hub mirrors bump asks, in order: the
// settings' (registries.mirrors, or $AGENTBOX_REGISTRY_MIRRORS), then the
// Docker daemon's own registry-mirrors, each once.
func RegistryMirrors(s settings.Settings, daemon []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range append(append([]string(nil), s.Registries.Mirrors...), daemon...) {
		key, err := images.ParseMirror(m)
		if err != nil {
			key = m // the resolver reports it
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, m)
		}
	}
	return out
}

// NPMClient is bump's client of the npm registry in use (the settings',
// else npm's own configuration as dir sees it), with the credential npm's
// configuration holds for it.
func NPMClient(dir string, s settings.Settings, getenv func(string) string) *npm.Client {
	reg := s.NPMRegistry(dir, getenv)
	return npm.NewClient(npm.Options{Registry: reg, Transport: transport(s),
		Authorization: npm.AuthFromConfig(reg, dir, getenv).Header})
}

// NewDebianArchive is the copy of Debian's archive the settings name (a
// snapshot copy or a plain mirror; builds get it from the compose file,
// which passes AGENTBOX_DEBIAN_* to both Dockerfiles), else Debian's
// snapshot service.
func NewDebianArchive(s settings.Settings) *debian.Archive {
	base := s.Debian.Archive
	if base == "" {
		base = lockfile.DebianArchive
	}
	return &debian.Archive{Base: base, Layout: s.Debian.Layout, Security: s.Debian.Security,
		Client: &http.Client{Transport: transport(s)}}
}

// transport is the HTTP transport of bump's clients: proxies from the
// environment, and the system's roots with the settings' ca_certificates
// (settings.LoadUser checked that they can be read).
func transport(s settings.Settings) http.RoundTripper {
	t, err := s.Transport()
	if err != nil {
		return http.DefaultTransport
	}
	return t
}
