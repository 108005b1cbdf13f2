#!/usr/bin/env bash
# Builds the test cluster's binaries from the Go module proxy: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubelet from k8s.io/kubernetes,
# etcd from go.etcd.io/etcd/server/v3, and kubectl when none is on PATH. The
# k8s.io/kubernetes module cannot be built as the main module (its staging
# modules are not in its zip), so a wrapper module requires it and replaces
# every staging module with its published version; the replace block is
# generated from the upstream go.mod. Also builds the pause image (pause.c
# from the same module zip, static) as a docker archive, without Docker.
#
#   build.sh
#
# Cached: a stamp file records the pinned versions; when it matches and every
# binary exists, nothing is built. With AGENTBOX_K8S_CONTAINERD set to a
# containerd socket, it also imports the pause image there (namespace k8s.io)
# unless it is already present.
#
#   AGENTBOX_K8S_BIN         binary cache (default /var/tmp/agentbox-k8s/bin)
#   AGENTBOX_K8S_BUILD       wrapper module and scratch (default: BIN/../build)
#   AGENTBOX_K8S_CONTAINERD  containerd socket to import the pause image into
#   K8S_VERSION, ETCD_VERSION  pinned versions (defaults below)
set -euo pipefail
export LC_ALL=C

K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.4}
BIN=${AGENTBOX_K8S_BIN:-/var/tmp/agentbox-k8s/bin}
BUILD=${AGENTBOX_K8S_BUILD:-$(dirname "$BIN")/build}
# The staging modules are published as v0.MINOR.PATCH for k8s v1.MINOR.PATCH.
STAGING_VERSION=v0.${K8S_VERSION#v1.}
PAUSE_IMAGE=${PAUSE_IMAGE:-agentbox.local/pause:3.10.1}
STAMP_TEXT="kubernetes=$K8S_VERSION etcd=$ETCD_VERSION pause=$PAUSE_IMAGE"
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

log() { printf 'k8s-build: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
elapsed() { local ms=$(((${EPOCHREALTIME/./} - ${1/./}) / 1000)); printf '%d.%03d s' $((ms / 1000)) $((ms % 1000)); }

command -v go >/dev/null 2>&1 || die "go not found"
command -v gcc >/dev/null 2>&1 || die "gcc not found (apt-get install gcc libc6-dev)"

# wanted prints the binaries this machine needs in the cache.
wanted() {
	printf '%s\n' "${K8S_CMDS[@]}" etcd
	command -v kubectl >/dev/null 2>&1 || echo kubectl
	echo pause.tar
}

cached() {
	[[ -f $BIN/STAMP && $(<"$BIN/STAMP") == "$STAMP_TEXT" ]] || return 1
	local f
	for f in $(wanted); do
		[[ -s $BIN/$f ]] || return 1
	done
}

# write_wrapper writes the wrapper module's go.mod: one replace line per
# staging module of the upstream go.mod (sample-* modules are left out).
write_wrapper() {
	local upstream
	upstream=$(cd "$BUILD" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[[ -s $upstream ]] || die "k8s.io/kubernetes@$K8S_VERSION: no go.mod downloaded"
	{
		printf 'module kbuild\n\ngo 1.24.0\n\ngodebug default=go1.24\n\n'
		printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "$K8S_VERSION"
		awk -v v="$STAGING_VERSION" '
			$2 == "=>" && $3 ~ /^\.\/staging\/src\// && $1 !~ /sample-/ { printf "\t%s => %s %s\n", $1, $1, v }
		' "$upstream"
		printf ')\n'
	} >"$BUILD/go.mod.tmp"
	local n
	n=$(grep -c ' => ' "$BUILD/go.mod.tmp")
	((n > 20)) || die "only $n staging replaces found in $upstream"
	mv -f "$BUILD/go.mod.tmp" "$BUILD/go.mod"
	rm -f "$BUILD/go.sum"
	log "wrapper module: $n replaces from the upstream go.mod"
}

build_binaries() {
	local t0=$EPOCHREALTIME pkgs=() c
	for c in "${K8S_CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	command -v kubectl >/dev/null 2>&1 || pkgs+=(k8s.io/kubernetes/cmd/kubectl)
	(cd "$BUILD" && go get "${pkgs[@]/%/@$K8S_VERSION}" "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
	log "modules: $(elapsed "$t0")"
	t0=$EPOCHREALTIME
	local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
	local minor=${K8S_VERSION#v1.}
	ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*}"
	(cd "$BUILD" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BUILD/out/" "${pkgs[@]}")
	log "kubernetes: $(elapsed "$t0")"
	t0=$EPOCHREALTIME
	(cd "$BUILD" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BUILD/out/etcd" go.etcd.io/etcd/server/v3)
	log "etcd: $(elapsed "$t0")"
}

# build_pause compiles pause.c from the module zip and writes a docker
# archive (manifest.json, config, one layer) that `ctr images import` reads.
build_pause() {
	local dir src root layer diff cfg
	dir=$(cd "$BUILD" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
	src=$dir/build/pause/linux/pause.c
	[[ -f $src ]] || die "$src not found"
	root=$BUILD/pause/rootfs
	rm -rf "$BUILD/pause" && mkdir -p "$root" "$BUILD/pause/archive"
	gcc -Os -static -DVERSION="$K8S_VERSION-agentbox" -o "$root/pause" "$src"
	layer=$BUILD/pause/layer.tar
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$root" -cf "$layer" pause
	diff=$(sha256sum "$layer" | cut -d' ' -f1)
	mkdir -p "$BUILD/pause/archive/$diff"
	mv "$layer" "$BUILD/pause/archive/$diff/layer.tar"
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$diff" >"$BUILD/pause/config.json"
	cfg=$(sha256sum "$BUILD/pause/config.json" | cut -d' ' -f1)
	mv "$BUILD/pause/config.json" "$BUILD/pause/archive/$cfg.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cfg" "$PAUSE_IMAGE" "$diff" \
		>"$BUILD/pause/archive/manifest.json"
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$BUILD/pause/archive" -cf "$BUILD/out/pause.tar" .
}

build_all() {
	local t0=$EPOCHREALTIME f
	mkdir -p "$BUILD" "$BIN"
	rm -rf "$BUILD/out" && mkdir -p "$BUILD/out"
	write_wrapper
	build_binaries
	build_pause
	rm -f "$BIN/STAMP"
	for f in $(wanted); do
		mv -f "$BUILD/out/$f" "$BIN/$f"
	done
	printf '%s' "$STAMP_TEXT" >"$BIN/STAMP"
	log "built $(wanted | tr '\n' ' ')into $BIN: $(elapsed "$t0")"
}

# import_pause imports the pause image into the containerd at $1.
import_pause() {
	local sock=$1
	if ctr -a "$sock" -n k8s.io images ls -q | grep -qxF "$PAUSE_IMAGE"; then
		return 0
	fi
	ctr -a "$sock" -n k8s.io images import --no-unpack "$BIN/pause.tar" >/dev/null
	log "imported $PAUSE_IMAGE"
}

if cached; then
	log "binaries for $STAMP_TEXT cached in $BIN: skip"
else
	build_all
fi
if [[ -n ${AGENTBOX_K8S_CONTAINERD-} ]]; then
	import_pause "$AGENTBOX_K8S_CONTAINERD"
fi
