package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/agentbox-dev/agentbox/audit"
	"github.com/agentbox-dev/agentbox/bump"
	"github.com/agentbox-dev/agentbox/egress"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/agentbox-dev/agentbox/task/kube"
)

// deps are the collaborators the commands reach the world through: the
// registries bump asks, and the sandbox fetch takes the agent's branches
// from. main gives the real ones (realDeps); tests give their own, so that
// tests never share a package variable and can run in parallel.
type deps struct {
	// settings returns the user's settings (mirrors, registries).
	settings func() (settings.Settings, error)
	// resolver returns the image resolver of a bump: Docker Hub's images
	// through the settings' registry mirrors, then the Docker daemon's
	// (asked within ctx).
	resolver func(ctx context.Context, s settings.Settings) bump.Registry
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
	egressLog egress.LogSource
	// egress runs agentbox-egress with args in the egress container of the
	// sandbox or of a task, and returns its output (allow, revoke).
	egress egress.Runner
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
		settings: func() (settings.Settings, error) { return settings.LoadUser(os.Getenv) },
		resolver: func(ctx context.Context, s settings.Settings) bump.Registry {
			return bump.NewRegistry(s, sandbox.DaemonMirrors(ctx))
		},
		npm: func(dir string, s settings.Settings) npm.Source {
			return bump.NPMClient(dir, s, os.Getenv)
		},
		debian: func(s settings.Settings) bump.DebianArchive { return bump.NewDebianArchive(s) },
		now:    time.Now,
		bundle: sandbox.BundleBranches,
		// A task on a cluster: its pod's egress container, through kubectl.
		egressLog: kube.EgressLog(sandbox.EgressLog),
		egress:    kube.EgressRunner(sandbox.EgressRunner()),
		profile:   kube.Profile(sandbox.ProfileIn),
		auditDir:  audit.StateDir,
		user:      audit.HostUser,
		up:        upSandbox,

		containers: sandbox.ContainersOf,
		taskState:  dockerTaskState,
	}
}
