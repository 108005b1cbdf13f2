package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/bump"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/lockfile"
	"github.com/agentbox-dev/agentbox/task"
)

// imageRegistry resolves image tags and reads an image's os-release.
type imageRegistry interface {
	images.Resolver
	images.OSReleaser
}

// deps are the collaborators the commands reach the world through: the
// registries bump asks, and the sandbox fetch takes the agent's branches
// from. main gives the real ones (realDeps); tests give their own, so that
// tests never share a package variable and can run in parallel.
type deps struct {
	// settings returns the user's settings (mirrors, registries).
	settings func() (settings.Settings, error)
	// resolver returns the image resolver of a bump: Docker Hub's images
	// through the settings' registry mirrors, then the Docker daemon's.
	resolver func(s settings.Settings) imageRegistry
	// npm returns the npm registry client of a bump of the project in dir.
	npm func(dir string, s settings.Settings) npm.Source
	// debian returns Debian's snapshot archive, or the copy the settings
	// name.
	debian func(s settings.Settings) bump.DebianArchive
	// now is the time bump asks the snapshot archive for.
	now func() time.Time
	// bundle writes a git bundle of the agent's branches (fetch).
	bundle bundleSource
	// egressLog opens the egress log of the sandbox or of a task (blocked).
	egressLog egressLogSource
	// egress runs agentbox-egress with args in the egress container of the
	// sandbox or of a task, and returns its output (allow, revoke).
	egress egressRunner
	// profile returns the profile that the sandbox (task "") or a task
	// runs (allow).
	profile func(ctx context.Context, dir, task string) (string, error)
	// auditDir is the directory of the audit logs (allow, revoke, audit).
	auditDir func() (string, error)
	// user names the host user for the audit log.
	user func() string
	// up builds and starts the sandbox under a profile (policy remove of
	// an entry baked into the running egress image).
	up func(ctx context.Context, dir, profile string, stdout, stderr io.Writer) error
	// containers lists the containers of a compose project (status).
	containers func(ctx context.Context, project string) ([]containerInfo, error)
	// taskState is a recorded task's state now, as ps shows it (status).
	taskState func(ctx context.Context, dir string, rec *task.Record) (string, *int)
}

// realDeps are the collaborators of the installed agentbox: the registries
// named by the Docker and npm configurations, and the running sandbox.
func realDeps() deps {
	return deps{
		settings: loadSettings,
		resolver: func(s settings.Settings) imageRegistry {
			mirrors := registryMirrors(s, daemonMirrors(context.Background()))
			return images.NewRegistryResolver(images.RegistryOptions{Mirrors: mirrors, Transport: transport(s)})
		},
		npm: func(dir string, s settings.Settings) npm.Source {
			return npmClient(dir, s, os.Getenv)
		},
		debian: func(s settings.Settings) bump.DebianArchive {
			return &debian.Archive{Base: debianArchive(s), Layout: s.Debian.Layout, Security: s.Debian.Security,
				Client: &http.Client{Transport: transport(s)}}
		},
		now:       time.Now,
		bundle:    composeBundle,
		egressLog: dockerEgressLog,
		egress:    dockerEgress,
		profile:   dockerProfile,
		auditDir:  audit.StateDir,
		user:      audit.HostUser,
		up:        upSandbox,

		containers: dockerContainers,
		taskState:  dockerTaskState,
	}
}

// loadSettings reads the user's settings and checks that their
// certificates can be read: every client of bump trusts them.
func loadSettings() (settings.Settings, error) {
	s, err := settings.Load(settings.Path(), os.Getenv)
	if err != nil {
		return s, err
	}
	_, err = s.CAPEM()
	return s, err
}

// transport is the HTTP transport of bump's clients: proxies from the
// environment, and the system's roots with the settings' ca_certificates
// (loadSettings checked that they can be read).
func transport(s settings.Settings) http.RoundTripper {
	t, err := s.Transport()
	if err != nil {
		return http.DefaultTransport
	}
	return t
}

// npmClient is bump's client of the npm registry in use (the settings',
// else npm's own configuration), with the credential npm's configuration
// holds for it.
func npmClient(dir string, s settings.Settings, getenv func(string) string) *npm.Client {
	reg := s.NPMRegistry(dir, getenv)
	return npm.NewClient(npm.Options{Registry: reg, Transport: transport(s),
		Authorization: npm.AuthFromConfig(reg, dir, getenv).Header})
}

// debianArchive is the copy of Debian's archive the settings name (a
// snapshot copy or a plain mirror), for bump (builds get it from the
// compose file, which passes AGENTBOX_DEBIAN_* to both Dockerfiles), or
// Debian's snapshot service.
func debianArchive(s settings.Settings) string {
	if s.Debian.Archive != "" {
		return s.Debian.Archive
	}
	return lockfile.DebianArchive
}
