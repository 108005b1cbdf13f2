#!/usr/bin/env bash
# Installs and starts what the end-to-end test needs, as root on a Debian
# bookworm machine: Docker Engine (Debian's docker.io; dockerd is started here,
# in the background, with no init system), debootstrap, compose v2 built from
# its Go module (`go install` refuses it because of the exclude directives in
# its go.mod), and the Dev Containers CLI from npm.
#
# Idempotent: every step that finds its work done skips it. Each step prints
# how long it took. Tools come from the package sources configured on the
# machine (apt, the Go module proxy, npm), by their clients' defaults.
#
#   COMPOSE_VERSION            compose module version (default below)
#   DEVCONTAINER_CLI_VERSION   @devcontainers/cli version (default below)
#   AGENTBOX_E2E_STATE         logs and build cache (default /var/tmp/agentbox-e2e)
set -euo pipefail
export LC_ALL=C

COMPOSE_VERSION=${COMPOSE_VERSION:-v2.40.3}
DEVCONTAINER_CLI_VERSION=${DEVCONTAINER_CLI_VERSION:-0.89.0}
STATE=${AGENTBOX_E2E_STATE:-/var/tmp/agentbox-e2e}
DOCKERD_LOG=$STATE/dockerd.log
# A system-wide plugin directory: found by every docker CLI whatever $HOME is.
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins

log() { printf 'e2e-setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# step NAME FUNC: runs FUNC and prints its wall time; FUNC sets outcome=skip
# when it found nothing to do.
step() {
	local name=$1 fn=$2 t0=$EPOCHREALTIME t1 ms
	outcome=done
	"$fn"
	t1=$EPOCHREALTIME
	ms=$(((${t1/./} - ${t0/./}) / 1000))
	printf 'e2e-setup: %-30s %-5s %4d.%03d s\n' "$name" "$outcome" $((ms / 1000)) $((ms % 1000)) >&2
}

((EUID == 0)) || die "must run as root (installs packages, starts dockerd)"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: a Debian machine is needed"
mkdir -p "$STATE"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'; }

# --- Debian packages ---------------------------------------------------------
apt_packages() {
	local need=() p
	for p in docker.io debootstrap; do
		installed "$p" || need+=("$p")
	done
	if ((${#need[@]} == 0)); then outcome=skip; return; fi
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# --no-install-recommends: docker.io recommends apparmor, cgroupfs-mount,
	# git, xz-utils...; none is needed here.
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# --- dockerd -----------------------------------------------------------------
docker_up() { docker info >/dev/null 2>&1; }

start_dockerd() {
	if docker_up; then outcome=skip; return; fi
	if [[ -S /var/run/docker.sock ]] && pgrep -x dockerd >/dev/null; then
		log "dockerd runs but does not answer yet; waiting"
	else
		rm -f /var/run/docker.pid
		log "starting dockerd (log: $DOCKERD_LOG)"
		# Its own session, so that it outlives this script and its job, and
		# none of the script's other descriptors: a lock the caller holds
		# (flock FILE make e2e-setup) would be held as long as dockerd runs.
		setsid "$(PATH=$PATH:/usr/sbin:/sbin command -v dockerd)" >>"$DOCKERD_LOG" 2>&1 </dev/null \
			3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	fi
	local i
	for ((i = 0; i < 600; i++)); do
		docker_up && return 0
		if ((i % 10 == 0)) && ! pgrep -x dockerd >/dev/null; then
			tail -n 30 "$DOCKERD_LOG" >&2 || true
			die "dockerd exited; see $DOCKERD_LOG"
		fi
		sleep 0.1
	done
	tail -n 30 "$DOCKERD_LOG" >&2 || true
	die "dockerd did not answer within 60 s; see $DOCKERD_LOG"
}

# --- Docker Hub mirror --------------------------------------------------------
# The Quickstart's e2e builds FROM docker.io/library/...@sha256: with no
# internet: the daemon pulls Docker Hub's images through the test's registry,
# which listens on 127.0.0.1:5000, as a user's daemon pulls through a mirror.
# dockerd reloads registry-mirrors on SIGHUP; a daemon.json of the machine's
# own is not rewritten.
HUB_MIRROR=http://127.0.0.1:5000
DAEMON_JSON=/etc/docker/daemon.json

hub_mirror() {
	if docker info --format '{{json .RegistryConfig.Mirrors}}' 2>/dev/null | grep -qF "\"$HUB_MIRROR/\""; then
		outcome=skip
		return
	fi
	if [[ -s $DAEMON_JSON ]] && ! grep -qF "\"$HUB_MIRROR\"" "$DAEMON_JSON"; then
		die "$DAEMON_JSON exists without \"registry-mirrors\": [\"$HUB_MIRROR\"]: add it and run again"
	fi
	if [[ ! -s $DAEMON_JSON ]]; then
		mkdir -p "${DAEMON_JSON%/*}"
		# insecure-registries too: the daemon hands its mirrors to BuildKit,
		# whose resolver speaks plain HTTP to the hosts listed there.
		printf '{\n  "registry-mirrors": ["%s"],\n  "insecure-registries": ["%s"]\n}\n' "$HUB_MIRROR" "${HUB_MIRROR#http://}" >"$DAEMON_JSON"
		log "wrote $DAEMON_JSON (registry-mirrors: $HUB_MIRROR)"
	fi
	if docker_up; then
		kill -HUP "$(cat /var/run/docker.pid)"
		local i
		for ((i = 0; i < 100; i++)); do
			docker info --format '{{json .RegistryConfig.Mirrors}}' 2>/dev/null | grep -qF "\"$HUB_MIRROR/\"" && return 0
			sleep 0.1
		done
		die "dockerd did not take registry-mirrors from $DAEMON_JSON on SIGHUP; see $DOCKERD_LOG"
	fi
}

# --- compose v2 --------------------------------------------------------------
compose_ok() {
	local v
	v=$(docker compose version --short 2>/dev/null) || return 1
	[[ v${v#v} == "$COMPOSE_VERSION" ]]
}

build_compose() {
	if compose_ok; then outcome=skip; return; fi
	command -v go >/dev/null 2>&1 || die "go not found: needed to build compose"
	local dir
	log "building compose $COMPOSE_VERSION from its Go module (about 100 s on 2 cores; log: $STATE/compose-build.log)"
	# Outside any module (so that no go.mod or go.sum is touched).
	dir=$(cd "$STATE" && GOWORK=off GOFLAGS= go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[[ -n $dir && -d $dir ]] || die "go mod download github.com/docker/compose/v2@$COMPOSE_VERSION gave no directory"
	mkdir -p "$PLUGIN_DIR"
	# The module's own go.mod (with its exclude and replace directives) is
	# the main module here; the module cache is read-only, so the binary goes
	# to a temporary file first.
	if ! (
		cd "$dir"
		GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath \
			-ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
			-o "$PLUGIN_DIR/.docker-compose.tmp" ./cmd
	) >"$STATE/compose-build.log" 2>&1; then
		grep -v '^go: downloading' "$STATE/compose-build.log" | tail -n 30 >&2
		die "building compose failed; see $STATE/compose-build.log"
	fi
	mv -f "$PLUGIN_DIR/.docker-compose.tmp" "$PLUGIN_DIR/docker-compose"
	compose_ok || die "docker compose version does not say $COMPOSE_VERSION: $(docker compose version 2>&1 | head -n 1)"
}

# --- Dev Containers CLI ------------------------------------------------------
devcontainer_ok() {
	[[ $(devcontainer --version 2>/dev/null) == "$DEVCONTAINER_CLI_VERSION" ]]
}

install_devcontainer() {
	if devcontainer_ok; then outcome=skip; return; fi
	command -v npm >/dev/null 2>&1 || die "npm not found: needed for @devcontainers/cli"
	log "installing @devcontainers/cli@$DEVCONTAINER_CLI_VERSION"
	npm install -g --no-fund --no-audit --loglevel=error "@devcontainers/cli@$DEVCONTAINER_CLI_VERSION" >/dev/null
	devcontainer_ok || die "devcontainer --version does not say $DEVCONTAINER_CLI_VERSION"
}

t_all=$EPOCHREALTIME
step "apt (docker.io, debootstrap)" apt_packages
step "dockerd" start_dockerd
step "Docker Hub mirror" hub_mirror
step "compose $COMPOSE_VERSION" build_compose
step "devcontainer CLI" install_devcontainer
ms=$(((${EPOCHREALTIME/./} - ${t_all/./}) / 1000))
log "ready in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s: $(docker version --format 'docker {{.Client.Version}} (client), {{.Server.Version}} (server)'); compose $(docker compose version --short); devcontainer $(devcontainer --version)"
