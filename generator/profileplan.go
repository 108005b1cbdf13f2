package generator

import (
	"strconv"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
)

// The plan of each profile: its firewall program and its compose file.

// Where the locked filesystem's pieces are. workspace-init, a one-shot
// service of the agent image, clones the project afresh into the
// LockedVolume mounted at CloneDir, as InitUID: the agent, another uid,
// sees that volume read-only at the workspace path and can write only /tmp
// and the OutputVolume at OutputDir.
const (
	CloneDir     = "/var/lib/agentbox/clone"
	InitUID      = 65532
	OutputDir    = "/output"
	LockedVolume = "workspace-locked"
	OutputVolume = "output"
	// FreshCloneEnv, set on workspace-init, makes the workspace entrypoint
	// empty CloneDir and clone the project into it.
	FreshCloneEnv = "AGENTBOX_FRESH_CLONE"
	// HiddenEnv, set on the agent (and workspace-init) by a profile with
	// workspace.hidden patterns of its own, holds them, space-separated.
	HiddenEnv = "AGENTBOX_HIDDEN_EXTRA"
	// ProfileEnv is the egress service's variable that selects the
	// profile's firewall program in the egress image.
	ProfileEnv = "AGENTBOX_PROFILE"
	// ProfileLabel, on both services, names the profile the sandbox runs.
	ProfileLabel = "dev.agentbox.profile"
	// ProfilesDir holds the profiles' compose files other than the default's.
	ProfilesDir = OutDir + "/profiles"
	// ImageProfilesDir holds every profile's firewall program in the egress
	// image, one directory each.
	ImageProfilesDir = "/etc/agentbox/profiles"
	// ImageProfileLink is the link that the egress image's entrypoint makes
	// to the selected profile's directory; the firewall's paths lead there.
	ImageProfileLink = "/run/agentbox-profile"
	// ProfileSelector is the egress image's entrypoint: it checks ProfileEnv
	// and runs the selected profile's firewall program.
	ProfileSelector      = EgressDir + "/profile.sh"
	ImageProfileSelector = "/usr/local/bin/agentbox-profile"
)

// ProfilePlan is what render needs of one profile.
type ProfilePlan struct {
	Name        string
	Locked      bool
	Policy      firewall.Policy
	CPUs        string
	Memory      string
	Pids        int
	Mounts      []Mount
	StateVolume string
	Compose     string    // its compose file, relative to the project
	Egress      string    // its firewall program's directory, relative to the project
	Hidden      []string  // the profile's own workspace.hidden
	Keys        []HeldKey // the model credentials its gateway holds (keys.go)
}

// ProfileCompose is the compose file of profile name: the default's is
// ComposeFile.
func ProfileCompose(cfg *config.Config, name string) string {
	if name == cfg.DefaultProfile {
		return ComposeFile
	}
	return ProfilesDir + "/" + name + ".compose.yml"
}

// ProfileEgressDir is where profile name's firewall policy is generated:
// balanced's where it has always been, the others' in a directory each.
func ProfileEgressDir(name string) string {
	if name == config.ProfileBalanced {
		return EgressDir
	}
	return EgressDir + "/" + name
}

func profilePlan(cfg *config.Config, p *config.Profile, stateVolume string) ProfilePlan {
	pp := ProfilePlan{
		Name:    p.Name,
		Locked:  p.Locked,
		Policy:  profilePolicy(cfg, p),
		Memory:  p.Memory,
		Pids:    p.Pids,
		Compose: ProfileCompose(cfg, p.Name),
		Egress:  ProfileEgressDir(p.Name),
		Hidden:  p.Hidden,
	}
	if p.CPUs > 0 {
		pp.CPUs = strconv.FormatFloat(p.CPUs, 'f', -1, 64)
	}
	if p.Locked {
		pp.Mounts = lockedMounts(cfg, p.Name)
	} else {
		if stateVolume != "" {
			pp.StateVolume = ProfileVolume(p.Name, stateVolume)
		}
		pp.Mounts = mounts(cfg, ProfileVolume(p.Name, WorkspaceVolume), pp.StateVolume)
	}
	return pp
}

// ProfileVolume is the compose name of volume key (WorkspaceVolume,
// AgentStateVolume, LockedVolume, OutputVolume) in profile's compose file:
// every profile's volumes are its own. Balanced and locked keep the names
// they always had; another profile's are PROFILE.KEY. Neither a profile's
// name nor a key holds '.' or '_', and compose names the volume
// PROJECT_PROFILE.KEY: one project, profile and key each.
func ProfileVolume(profile, key string) string {
	if profile == config.ProfileBalanced || profile == config.ProfileLocked {
		return key
	}
	return profile + "." + key
}

// Volume is the Docker name of profile's volume key in compose project
// project: compose's PROJECT_NAME.
func Volume(project, profile, key string) string {
	return project + "_" + ProfileVolume(profile, key)
}

// lockedMounts are the agent's volumes under locked profile profile: the
// clone read-only, and the output directory.
func lockedMounts(cfg *config.Config, profile string) []Mount {
	return []Mount{
		{Type: "volume", Source: ProfileVolume(profile, LockedVolume), Target: cfg.Workspace, ReadOnly: true, NoCopy: true,
			Why: "read-only: a fresh clone of the project that workspace-init made as another user (nocopy: the volume takes workspace-init's owner, not this directory's)"},
		{Type: "volume", Source: ProfileVolume(profile, OutputVolume), Target: OutputDir,
			Why: "the one writable directory besides /tmp: what the work leaves behind"},
	}
}
