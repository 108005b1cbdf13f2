#!/usr/bin/env bash
# A real single-node Kubernetes for the tests, as root on a Debian bookworm
# machine without an init system: a private containerd (Debian's, its own
# root, state and socket), etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kubelet, built by build.sh. No kube-proxy, no DNS: a
# pod gets the host's resolv.conf and an address on its own CNI bridge
# (no masquerade).
#
#   cluster.sh up                      install, build, start; wait for a Ready node
#   cluster.sh down                    stop everything and undo the host changes
#   cluster.sh status                  what runs
#   cluster.sh kubeconfig              print the kubeconfig's path
#   cluster.sh trust-registry H:PORT   pull from H:PORT over plain HTTP (containerd
#                                      already does for 127.0.0.1:PORT and localhost:PORT)
#   cluster.sh import-image IMAGE      copy a Docker image into the cluster
#   cluster.sh env                     print STATE, BIN, BRIDGE, SUBNET, KUBECONFIG
#
#   AGENTBOX_K8S_STATE   state, logs, kubeconfig (default /var/tmp/agentbox-k8s/state)
#   AGENTBOX_K8S_BIN     binary cache (default /var/tmp/agentbox-k8s/bin)
#   AGENTBOX_K8S_BRIDGE  CNI bridge (default agentbox-k8s0)
#   AGENTBOX_K8S_SUBNET  pod subnet (default 10.244.77.0/24)
#
# The kubelet changes the host; down undoes it: its iptables chains
# (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT), the bind mount of
# its root directory, the kubepods cgroups, the kernel settings it sets
# (saved at up, restored at down), and the CNI bridge. Binaries and the
# images containerd holds stay cached.
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${AGENTBOX_K8S_STATE:-/var/tmp/agentbox-k8s/state}
export AGENTBOX_K8S_BIN=${AGENTBOX_K8S_BIN:-/var/tmp/agentbox-k8s/bin}
BIN=$AGENTBOX_K8S_BIN
BRIDGE=${AGENTBOX_K8S_BRIDGE:-agentbox-k8s0}
SUBNET=${AGENTBOX_K8S_SUBNET:-10.244.77.0/24}
NODE=agentbox-k8s
PAUSE_IMAGE=agentbox.local/pause:3.10.1
ETCD_PORT=23790
ETCD_PEER_PORT=23800
API_PORT=16443
CTRD=$STATE/containerd
SOCK=$CTRD/containerd.sock
KUBECONFIG_FILE=$STATE/kubeconfig
CNI_BIN=/usr/lib/cni
# The components, in start order.
COMPONENTS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet)
# Kernel settings the kubelet (and the bridge plugin) may change.
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
	kernel/keys/root_maxkeys kernel/keys/root_maxbytes net/ipv4/ip_forward)
APT_PACKAGES=(containerd runc containernetworking-plugins gcc libc6-dev iptables iproute2 openssl curl)

# kubectl: the one on PATH, else the one build.sh built.
command -v kubectl >/dev/null 2>&1 || PATH=$BIN:$PATH

log() { printf 'k8s-cluster: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
elapsed() { local ms=$(((${EPOCHREALTIME/./} - ${1/./}) / 1000)); printf '%d.%03d s' $((ms / 1000)) $((ms % 1000)); }
kctl() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }
binary() { if [[ $1 == containerd ]]; then command -v containerd; else echo "$BIN/$1"; fi; }

# --- processes -----------------------------------------------------------------

pidfile() { echo "$STATE/run/$1.pid"; }

# pid_of prints the pid of a running component, or fails.
pid_of() {
	local f pid
	f=$(pidfile "$1")
	[[ -f $f ]] || return 1
	pid=$(<"$f")
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$(binary "$1")" || return 1
	echo "$pid"
}

# start NAME ARGS...: starts a component in its own session, logging to
# $STATE/logs/NAME.log, unless it runs.
start() {
	local name=$1
	shift
	if pid_of "$name" >/dev/null; then return 0; fi
	setsid "$(binary "$name")" "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$(pidfile "$name")"
	log "started $name (pid $!, log $STATE/logs/$name.log)"
}

# stop NAME...: SIGTERM to every named component at once, then SIGKILL to
# those still running after 20 s.
stop() {
	local name pid pids=() i
	for name in "$@"; do
		if pid=$(pid_of "$name"); then
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
			log "stopping $name (pid $pid)"
		fi
		rm -f "$(pidfile "$name")"
	done
	for pid in "${pids[@]}"; do
		for ((i = 0; i < 200; i++)); do
			[[ -d /proc/$pid ]] || break
			sleep 0.1
		done
		if [[ -d /proc/$pid ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
	done
}

# wait_for WHAT SECONDS COMMAND...: polls COMMAND every 0.2 s.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	die "$what not ready after $secs s; logs in $STATE/logs"
}

# --- up ------------------------------------------------------------------------

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'; }

apt_install() {
	local need=() p
	for p in "${APT_PACKAGES[@]}"; do installed "$p" || need+=("$p"); done
	((${#need[@]} == 0)) && return 0
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=300 update -qq
	apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# node_ip is the address of the interface of the default route, else the
# first global IPv4 address.
node_ip() {
	local dev ip
	dev=$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
	if [[ -n $dev ]]; then
		ip=$(ip -4 -o addr show dev "$dev" scope global | awk '{sub("/.*", "", $4); print $4; exit}')
	fi
	[[ -n ${ip-} ]] || ip=$(ip -4 -o addr show scope global | awk '{sub("/.*", "", $4); print $4; exit}')
	[[ -n $ip ]] || die "no global IPv4 address for the node"
	echo "$ip"
}

save_sysctls() {
	[[ -f $STATE/sysctl.saved ]] && return 0
	local s
	for s in "${SYSCTLS[@]}"; do
		printf '%s=%s\n' "$s" "$(</proc/sys/"$s")"
	done >"$STATE/sysctl.saved.tmp"
	mv "$STATE/sysctl.saved.tmp" "$STATE/sysctl.saved"
}

write_containerd_config() {
	mkdir -p "$CTRD/certs.d" "$STATE/cni/net.d"
	cat >"$CTRD/config.toml" <<EOF
# Written by scripts/k8s/cluster.sh: the test cluster's private containerd.
version = 2
root = "$CTRD/root"
state = "$CTRD/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$CTRD/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CTRD/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Root lacks CAP_SYS_RESOURCE here: no negative oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$STATE/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".registry]
    # Read at every pull: trust-registry adds HOST:PORT/hosts.toml.
    config_path = "$CTRD/certs.d"
EOF
	cat >"$STATE/cni/net.d/10-agentbox-k8s.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "agentbox-k8s", "plugins": [{"type": "bridge", "bridge": "$BRIDGE",
  "isGateway": true, "ipMasq": false, "hairpinMode": true,
  "ipam": {"type": "host-local", "subnet": "$SUBNET", "routes": [{"dst": "0.0.0.0/0"}],
    "dataDir": "$STATE/cni/ipam"}}]}
EOF
}

# write_pki makes the serving certificate (self-signed, also the CA that
# clients trust), the service-account key pair and the admin token.
write_pki() {
	local pki=$STATE/pki ip=$1
	[[ -s $pki/tokens.csv ]] && return 0
	mkdir -p "$pki"
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=agentbox-k8s-apiserver" \
		-addext "subjectAltName=IP:127.0.0.1,IP:$ip,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-keyout "$pki/apiserver.key" -out "$pki/apiserver.crt" 2>/dev/null
	openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	local token
	token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	printf '%s,admin,admin,system:masters\n' "$token" >"$pki/tokens.csv"
	chmod 600 "$pki"/*.key "$pki/tokens.csv"
}

write_kubeconfig() {
	local token
	token=$(cut -d, -f1 "$STATE/pki/tokens.csv")
	cat >"$KUBECONFIG_FILE.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: agentbox-k8s
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $STATE/pki/apiserver.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: agentbox-k8s
  context: {cluster: agentbox-k8s, user: admin, namespace: default}
current-context: agentbox-k8s
EOF
	chmod 600 "$KUBECONFIG_FILE.tmp"
	mv "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"
}

# write_kubelet_config: the kubelet never collects images. Its default
# collects above 85 % of the disk, and a test machine's disk fills with the
# tests' Docker images: it then deleted the pause image, which containerd
# 1.6 does not pin and cannot pull here, and no pod started again.
write_kubelet_config() {
	cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$SOCK
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
podLogsDir: $STATE/podlogs
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

start_containerd() {
	start containerd --config "$CTRD/config.toml"
	wait_for containerd 30 ctr -a "$SOCK" version
}

start_etcd() {
	start etcd --name "$NODE" --data-dir "$STATE/etcd" --unsafe-no-fsync \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "$NODE=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls ""
	wait_for etcd 60 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

start_control_plane() {
	local ip=$1 pki=$STATE/pki kc=$KUBECONFIG_FILE
	start kube-apiserver --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address 127.0.0.1 --advertise-address "$ip" --secure-port "$API_PORT" \
		--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--token-auth-file "$pki/tokens.csv" --authorization-mode AlwaysAllow \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
		--service-account-signing-key-file "$pki/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
		--kubelet-preferred-address-types InternalIP
	wait_for kube-apiserver 120 kctl get --raw /readyz
	start kube-controller-manager --kubeconfig "$kc" --authentication-kubeconfig "$kc" \
		--authorization-kubeconfig "$kc" --leader-elect=false --bind-address 127.0.0.1 \
		--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/apiserver.crt" \
		--use-service-account-credentials=false
	start kube-scheduler --kubeconfig "$kc" --authentication-kubeconfig "$kc" \
		--authorization-kubeconfig "$kc" --leader-elect=false --bind-address 127.0.0.1
}

node_ready() {
	[[ $(kctl get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

all_running() {
	local c
	for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null || return 1; done
}

up() {
	local t0=$EPOCHREALTIME ip
	((EUID == 0)) || die "must run as root (starts containerd and the kubelet)"
	mkdir -p "$STATE/logs" "$STATE/run" "$STATE/podlogs"
	if all_running && node_ready 2>/dev/null; then
		log "running; kubeconfig $KUBECONFIG_FILE"
		return 0
	fi
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found: a Debian machine is needed"
	apt_install
	ip=$(node_ip)
	save_sysctls
	write_containerd_config
	write_pki "$ip"
	write_kubeconfig
	write_kubelet_config
	start_containerd
	AGENTBOX_K8S_CONTAINERD=$SOCK "$HERE/build.sh"
	command -v kubectl >/dev/null 2>&1 || die "kubectl neither on PATH nor in $BIN"
	start_etcd
	start_control_plane "$ip"
	start kubelet --kubeconfig "$KUBECONFIG_FILE" --config "$STATE/kubelet.yaml" --root-dir "$STATE/kubelet" \
		--hostname-override "$NODE" --node-ip "$ip"
	wait_for "node $NODE" 180 node_ready
	wait_for "service account default/default" 120 kctl -n default get serviceaccount default
	log "up in $(elapsed "$t0"); kubeconfig $KUBECONFIG_FILE"
}

# --- down ----------------------------------------------------------------------

# drain deletes every pod while the kubelet runs, so that it stops their
# sandboxes (and CNI removes their interfaces) the regular way.
drain() {
	pid_of kubelet >/dev/null && pid_of kube-apiserver >/dev/null || return 0
	stop kube-controller-manager kube-scheduler
	kctl delete pods --all --all-namespaces --grace-period=1 --timeout=60s >/dev/null 2>&1 ||
		log "deleting the pods did not finish; removing what is left by force"
	local i
	for ((i = 0; i < 150; i++)); do
		[[ -z $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null) ]] && return 0
		sleep 0.2
	done
}

# remove_containers kills what is left in containerd and frees the network
# namespaces it made.
remove_containers() {
	pid_of containerd >/dev/null || return 0
	local c ns
	for c in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true
	done
	sleep 0.5
	for c in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$SOCK" -n k8s.io tasks delete -f "$c" >/dev/null 2>&1 || true
	done
	for c in $(ctr -a "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
		ctr -a "$SOCK" -n k8s.io containers delete "$c" >/dev/null 2>&1 || true
	done
	for ns in "$CTRD/state"/netns/*; do
		[[ -e $ns ]] || continue
		umount "$ns" 2>/dev/null || true
		rm -f "$ns"
	done
}

# kill_shims kills the runc shims that serve this containerd.
kill_shims() {
	local p
	for p in /proc/[0-9]*; do
		[[ -r $p/cmdline ]] || continue
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q "^/usr/bin/containerd-shim-runc-v2 .*-address $SOCK "; then
			kill -KILL "${p#/proc/}" 2>/dev/null || true
		fi
	done
}

# clean_iptables removes the kubelet's chains and the rules that jump to
# them, in every table of both families, with the iptables flavour given.
clean_iptables() {
	local ipt table rule chain
	for ipt in iptables ip6tables iptables-legacy ip6tables-legacy; do
		command -v "$ipt" >/dev/null 2>&1 || continue
		for table in filter nat mangle; do
			"$ipt" -w -t "$table" -S >/dev/null 2>&1 || continue
			# (iptables-nft warns on stderr when legacy tables exist too.)
			while read -r rule; do
				# shellcheck disable=SC2086 # the rule is iptables words
				"$ipt" -w -t "$table" -D ${rule#-A } || true
			done < <("$ipt" -w -t "$table" -S 2>/dev/null | grep -E '^-A ' | grep -vE '^-A KUBE-' | grep -E -- '-j KUBE-(FIREWALL|KUBELET-CANARY|IPTABLES-HINT)( |$)')
			for chain in $("$ipt" -w -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-(FIREWALL|KUBELET-CANARY|IPTABLES-HINT)$/ {print $2}'); do
				"$ipt" -w -t "$table" -F "$chain"
				"$ipt" -w -t "$table" -X "$chain"
			done
		done
	done
}

# unmount_state unmounts everything mounted under the state directory, the
# deepest first (the kubelet's bind mount of its root directory, volumes).
unmount_state() {
	local m
	while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m"
	done < <(awk -v s="$STATE" '$5 == s || index($5, s "/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
}

remove_cgroups() {
	local d
	for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
		[[ -d $d ]] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[[ -d $d ]] && log "warning: $d is left (processes still in it?)"
	done
	return 0
}

restore_sysctls() {
	[[ -f $STATE/sysctl.saved ]] || return 0
	local s v
	while IFS='=' read -r s v; do
		[[ $(</proc/sys/"$s") == "$v" ]] || echo "$v" >"/proc/sys/$s" || log "warning: cannot restore $s=$v"
	done <"$STATE/sysctl.saved"
	rm -f "$STATE/sysctl.saved"
}

down() {
	((EUID == 0)) || die "must run as root"
	local t0=$EPOCHREALTIME
	drain
	stop kubelet kube-scheduler kube-controller-manager kube-apiserver
	stop etcd
	remove_containers
	stop containerd
	kill_shims
	clean_iptables
	unmount_state
	ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"
	remove_cgroups
	restore_sysctls
	# The cluster's data; the binaries and containerd's images stay.
	rm -rf "$STATE/etcd" "$STATE/kubelet" "$STATE/pki" "$STATE/podlogs" "$STATE/cni/ipam" "$KUBECONFIG_FILE" \
		"$CTRD/certs.d" "$CTRD/state" "$CTRD/containerd.sock.ttrpc"
	log "down in $(elapsed "$t0")"
}

# --- the rest ------------------------------------------------------------------

status() {
	local c pid rc=0
	for c in "${COMPONENTS[@]}"; do
		if pid=$(pid_of "$c"); then
			printf '%-24s running (pid %s)\n' "$c" "$pid"
		else
			printf '%-24s stopped\n' "$c"
			rc=1
		fi
	done
	if pid_of kube-apiserver >/dev/null; then
		kctl get nodes -o wide 2>&1 || true
	fi
	return $rc
}

trust_registry() {
	local host=${1-}
	[[ $host =~ ^[A-Za-z0-9.-]+:[0-9]+$ ]] || die "usage: cluster.sh trust-registry HOST:PORT"
	mkdir -p "$CTRD/certs.d/$host"
	cat >"$CTRD/certs.d/$host/hosts.toml" <<EOF
# Written by scripts/k8s/cluster.sh trust-registry: plain HTTP.
server = "http://$host"
[host."http://$host"]
  capabilities = ["pull", "resolve"]
EOF
	log "containerd pulls $host/... over plain HTTP"
}

import_image() {
	local image=${1-}
	[[ -n $image ]] || die "usage: cluster.sh import-image IMAGE"
	pid_of containerd >/dev/null || die "containerd does not run: cluster.sh up first"
	docker save "$image" | ctr -a "$SOCK" -n k8s.io images import -
}

case ${1-} in
up) up ;;
down) down ;;
status) status ;;
kubeconfig) echo "$KUBECONFIG_FILE" ;;
env) printf 'STATE=%s\nBIN=%s\nBRIDGE=%s\nSUBNET=%s\nKUBECONFIG=%s\n' "$STATE" "$BIN" "$BRIDGE" "$SUBNET" "$KUBECONFIG_FILE" ;;
trust-registry) trust_registry "${2-}" ;;
import-image) import_image "${2-}" ;;
*) die "usage: cluster.sh up|down|status|kubeconfig|trust-registry HOST:PORT|import-image IMAGE|env" ;;
esac
