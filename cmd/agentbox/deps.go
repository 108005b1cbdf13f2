package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/debian"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/settings"
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
	debian func(s settings.Settings) generator.DebianArchive
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
}

// realDeps are the collaborators of the installed agentbox: the registries
// named by the Docker and npm configurations, and the running sandbox.
func realDeps() deps {
	return deps{
		settings: func() (settings.Settings, error) { return settings.Load(settings.Path(), os.Getenv) },
		resolver: func(s settings.Settings) imageRegistry {
			mirrors := registryMirrors(s, daemonMirrors(context.Background()))
			return images.NewRegistryResolver(images.RegistryOptions{Mirrors: mirrors})
		},
		npm: func(dir string, s settings.Settings) npm.Source {
			reg := s.NPM.Registry
			if reg == "" {
				reg = npm.RegistryFromConfig(dir, os.Getenv)
			}
			return npm.NewClient(npm.Options{Registry: reg})
		},
		debian: func(s settings.Settings) generator.DebianArchive {
			return &debian.Archive{Base: debianArchive(s)}
		},
		now:       time.Now,
		bundle:    composeBundle,
		egressLog: dockerEgressLog,
		egress:    dockerEgress,
		profile:   dockerProfile,
		auditDir:  stateAuditDir,
		user:      hostUser,
		up:        upSandbox,
	}
}

// debianArchive is the copy of Debian's snapshot archive the settings
// name, for bump (builds get it from the compose file, which passes
// AGENTBOX_DEBIAN_ARCHIVE to both Dockerfiles), or Debian's own.
func debianArchive(s settings.Settings) string {
	if s.Debian.Archive != "" {
		return s.Debian.Archive
	}
	return images.DebianArchive
}
