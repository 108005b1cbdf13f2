#!/usr/bin/env bash
# Builds the end-to-end test's Debian bookworm base image with debootstrap
# (variant minbase, debootstrap's default mirror) and `docker import`, as
# agentbox-e2e/debian:bookworm. Cached: an existing image is kept, and the
# root file system tarball is kept in $AGENTBOX_E2E_STATE, so that a new
# Docker data root only needs the import.
#
#   base-image.sh [REGISTRY]
#
# With REGISTRY (e.g. 127.0.0.1:5000) it also pushes the image as
# REGISTRY/agentbox-e2e/debian:bookworm and prints that reference with its
# digest (REGISTRY/agentbox-e2e/debian:bookworm@sha256:...) on stdout.
set -euo pipefail
export LC_ALL=C

IMAGE=${E2E_BASE_IMAGE:-agentbox-e2e/debian:bookworm}
SUITE=bookworm
STATE=${AGENTBOX_E2E_STATE:-/var/tmp/agentbox-e2e}
TARBALL=$STATE/debian-$SUITE-minbase.tar
registry=${1-}

log() { printf 'e2e-base-image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
elapsed() { local ms=$(((${EPOCHREALTIME/./} - ${1/./}) / 1000)); printf '%d.%03d s' $((ms / 1000)) $((ms % 1000)); }

((EUID == 0)) || die "must run as root (debootstrap)"
command -v docker >/dev/null 2>&1 || die "docker not found: run scripts/e2e/setup.sh"
docker info >/dev/null 2>&1 || die "the Docker daemon does not answer: run scripts/e2e/setup.sh"
mkdir -p "$STATE"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
	log "$IMAGE exists: skip"
else
	if [[ ! -s $TARBALL ]]; then
		command -v debootstrap >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
		command -v debootstrap >/dev/null 2>&1 || die "debootstrap not found: run scripts/e2e/setup.sh"
		t0=$EPOCHREALTIME
		root=$(mktemp -d "$STATE/rootfs.XXXXXX")
		trap 'rm -rf "$root"' EXIT
		log "debootstrap --variant=minbase $SUITE (log: $STATE/debootstrap.log)"
		if ! debootstrap --variant=minbase "$SUITE" "$root" >"$STATE/debootstrap.log" 2>&1; then
			tail -n 30 "$STATE/debootstrap.log" >&2
			die "debootstrap failed; see $STATE/debootstrap.log"
		fi
		# Nothing a build needs: package lists and caches.
		rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
		tar --numeric-owner -C "$root" -cf "$TARBALL.tmp" .
		mv -f "$TARBALL.tmp" "$TARBALL"
		rm -rf "$root"
		trap - EXIT
		log "debootstrap + tar: $(elapsed "$t0") ($(du -h "$TARBALL" | cut -f1))"
	fi
	t0=$EPOCHREALTIME
	docker import \
		-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		-c 'CMD ["bash"]' \
		-m "debootstrap --variant=minbase $SUITE" \
		"$TARBALL" "$IMAGE" >/dev/null
	log "docker import $IMAGE: $(elapsed "$t0")"
fi

if [[ -n $registry ]]; then
	t0=$EPOCHREALTIME
	remote=$registry/$IMAGE
	docker tag "$IMAGE" "$remote"
	docker push "$remote" >"$STATE/push.log" 2>&1 || { cat "$STATE/push.log" >&2; die "docker push $remote failed"; }
	digest=$(sed -n 's/.*digest: \(sha256:[0-9a-f]\{64\}\).*/\1/p' "$STATE/push.log" | tail -n 1)
	[[ -n $digest ]] || { cat "$STATE/push.log" >&2; die "docker push $remote printed no digest"; }
	log "docker push $remote: $(elapsed "$t0")"
	printf '%s@%s\n' "$remote" "$digest"
fi
