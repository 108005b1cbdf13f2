package sandbox

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"time"
)

// daemonMirrorsTimeout bounds "docker info": bump does not need Docker,
// and a daemon that does not answer means no mirrors of its own.
const daemonMirrorsTimeout = 5 * time.Second

// DaemonMirrors returns the Docker daemon's registry-mirrors (daemon.json,
// or dockerd --registry-mirror), as "docker info" reports them; none when
// docker is missing, its daemon does not answer within a few seconds, or
// ctx ends first.
func DaemonMirrors(ctx context.Context) []string {
	path, err := exec.LookPath("docker")
	if err != nil {
		return nil
	}
	return Docker{Path: path}.RegistryMirrors(ctx)
}

// RegistryMirrors returns the registry-mirrors of d's daemon; none when it
// does not answer within a few seconds or ctx ends first.
func (d Docker) RegistryMirrors(ctx context.Context) []string {
	if ctx.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, daemonMirrorsTimeout)
	defer cancel()
	out, err := d.output(ctx, "info", "--format", "{{json .RegistryConfig.Mirrors}}")
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
