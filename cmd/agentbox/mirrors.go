package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/settings"
)

// daemonMirrorsTimeout bounds "docker info": bump does not need Docker,
// and a daemon that does not answer means no mirrors of its own.
const daemonMirrorsTimeout = 5 * time.Second

// registryMirrors are the Docker Hub mirrors bump asks, in order: the
// settings' (registries.mirrors, or $AGENTBOX_REGISTRY_MIRRORS), then the
// Docker daemon's own registry-mirrors, each once.
func registryMirrors(s settings.Settings, daemon []string) []string {
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

// daemonMirrors returns the Docker daemon's registry-mirrors (daemon.json,
// or dockerd --registry-mirror), as "docker info" reports them; none when
// docker is missing or its daemon does not answer.
func daemonMirrors(ctx context.Context) []string {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, daemonMirrorsTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, docker, "info", "--format", "{{json .RegistryConfig.Mirrors}}").Output()
	if err != nil {
		return nil
	}
	return parseDaemonMirrors(out)
}

// parseDaemonMirrors reads docker info's JSON list of mirrors ("null" when
// there are none).
func parseDaemonMirrors(out []byte) []string {
	var list []string
	if json.Unmarshal([]byte(strings.TrimSpace(string(out))), &list) != nil {
		return nil
	}
	return list
}
