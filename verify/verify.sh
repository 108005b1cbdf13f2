#!/bin/bash
# agentbox verify: the probes, run by `agentbox verify` as the agent user inside
# the running agent container (docker compose exec -T -e NAME=VALUE... agent
# bash -s -- PHASE). It needs only bash, coreutils and getent, which every
# agent image has.
# Every probe prints one line: RESULT<TAB>AREA<TAB>PROBE<TAB>TRIED<TAB>HAPPENED,
# RESULT being PASS, FAIL or SKIP. Its one argument is the phase: all, write
# or check (persistence is checked across a restart), or one area alone.
# Its inputs come by name, each validated by agentbox; verifyVars in
# verify.go lists them, and a test checks that this script reads those and
# no others (required: ${NAME:?}; optional, absent when empty: ${NAME:-}):
set -u
export LC_ALL=C
phase=${1:?usage: verify.sh PHASE}
workspace=${AGENTBOX_VERIFY_WORKSPACE:?}            # the project's mount path
state_dir=${AGENTBOX_VERIFY_STATE_DIR:-}            # the agent's state volume, if any
allowed=${AGENTBOX_VERIFY_ALLOWED:-}                # host:port that must connect, if any
unlisted_name=${AGENTBOX_VERIFY_UNLISTED_NAME:?}    # a name that must not resolve
unlisted_addr=${AGENTBOX_VERIFY_UNLISTED_ADDRESS:?} # host:port (IPv4) that must be refused quickly
resolver=${AGENTBOX_VERIFY_RESOLVER:?}              # an IPv4 address of another DNS resolver
ipv6_addr=${AGENTBOX_VERIFY_IPV6_ADDRESS:?}         # [address]:port that must be refused
metadata_addr=${AGENTBOX_VERIFY_METADATA_ADDRESS:?} # the cloud metadata service, to be refused
memory_bytes=${AGENTBOX_VERIFY_MEMORY_BYTES:?}      # the memory limit
pids=${AGENTBOX_VERIFY_PIDS:?}                      # the pids limit
origin=${AGENTBOX_VERIFY_ORIGIN:?}                  # where the project's git database is mounted read-only
hidden=${AGENTBOX_VERIFY_HIDDEN:-}                  # workspace.hidden, one pattern a line
network_mode=${AGENTBOX_VERIFY_NETWORK:?}           # the profile's network: allowlist, none or open
output=${AGENTBOX_VERIFY_OUTPUT:-}                  # a locked profile's writable directory, if locked
forge=${AGENTBOX_VERIFY_FORGE:-}                    # "HOST PORT": a git forge and its front door, if any
readonly marker=.agentbox-verify-marker

report() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5"; }

# is_name HOST: HOST is a name, not an IPv4 or IPv6 address.
is_name() { [[ $1 == *[!0-9.]* && $1 != *:* ]]; }

# tcp HOST PORT: connect within 3 s; prints what happened, returns 0 on connect.
# What a sandbox with no network, or a filter with no upstream resolver,
# does is told from a refusal: "no network/upstream: ...".
tcp() {
	local out status
	if is_name "$1" && ! getent ahosts "$1" >/dev/null 2>&1; then
		unresolved "$1"; return 1 # a name; bash would say "Invalid argument"
	fi
	out=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>&1)
	status=$?
	case $status in
	0) echo "connected"; return 0 ;;
	124) echo "timed out after 3 s"; return 1 ;;
	esac
	out=${out##*: }
	case $out in
	"Network is unreachable") echo "no network/upstream: $out" ;;
	*) echo "refused: ${out:-error}" ;;
	esac
	return 1
}

# unresolved NAME: why NAME has no address. The filter answers a name it
# refuses with NXDOMAIN; a name it forwards, with what its upstream said, or
# nothing when there is none.
unresolved() {
	local rcode
	rcode=$(dns_tcp "$resolver" "$1")
	case $rcode in
	NXDOMAIN) echo "refused: $1 does not resolve (NXDOMAIN)" ;;
	NOERROR) echo "refused: $1 has no address" ;;
	*) echo "no network/upstream: $1 does not resolve (the resolver: $rcode)" ;;
	esac
}

# ms: milliseconds since the epoch.
ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

split_hostport() { # host:port or [v6]:port -> host port
	local hp=$1
	if [[ $hp == \[* ]]; then
		host=${hp%%]*}; host=${host#[}; port=${hp##*]:}
	else
		host=${hp%:*}; port=${hp##*:}
	fi
}

# dns_tcp SERVER NAME: a query over TCP; prints the answer's rcode name.
dns_tcp() (
	local label q="" first reply flags
	IFS=. read -ra labels <<<"$2"
	for label in "${labels[@]}"; do
		q+=$(printf '\\x%02x' "${#label}")$label
	done
	local body="\\x61\\x62\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00${q}\\x00\\x00\\x01\\x00\\x01"
	local len=$((12 + ${#2} + 2 + 4))
	exec 3<>"/dev/tcp/$1/53" 2>/dev/null || { echo "connection refused"; exit 1; }
	printf "$(printf '\\x%02x\\x%02x' $((len >> 8)) $((len & 255)))$body" >&3
	IFS= read -r -d '' -t 3 -u 3 first || true
	IFS= read -r -d '' -t 3 -u 3 reply || { echo "no answer"; exit 1; }
	printf -v flags '%d' "'${reply:4:1}"
	case $((flags & 15)) in
	0) echo NOERROR ;; 3) echo NXDOMAIN ;; 5) echo REFUSED ;; *) echo "rcode $((flags & 15))" ;;
	esac
)

files() {
	local p f what bad="" ws_root="" leaked=""
	# Nothing of the host but the project's git database (read-only, its
	# config masked): the workspace and the state are volumes.
	while read -r _ _ _ root mnt _; do
		[[ $mnt == "$workspace" ]] && ws_root=$root
		case $mnt in
		"$workspace" | "$origin" | "$origin/config" | "$state_dir" | "$output" | /etc/hosts | /etc/hostname | /etc/resolv.conf | /proc* | /sys* | /dev*) ;;
		/sbin/docker-init | /usr/sbin/docker-init) ;; # compose's init: true, Docker's own tini
		*) [[ $root != / ]] && bad+=" $mnt" ;;
		esac
	done </proc/self/mountinfo
	if [[ -z $bad ]]; then
		report PASS files "host paths" "list bind mounts" "only the git database, the workspace and the state volumes"
	else
		report FAIL files "host paths" "list bind mounts" "also mounted:$bad"
	fi
	if [[ $ws_root == *volumes/*/_data && -d $workspace/.git && ! -L $workspace/.git ]]; then
		report PASS files "workspace is a clone" "look at $workspace" "a git clone on a volume, not the project directory"
	else
		report FAIL files "workspace is a clone" "look at $workspace" "mounted from ${ws_root:-nowhere}"
	fi
	if [[ -n $output ]]; then
		locked_files
	else
		origin_files
	fi
	if [[ -n $hidden ]]; then
		local tracked=""
		if git -C "$workspace" rev-parse --git-dir >/dev/null 2>&1; then
			tracked=$(git -C "$workspace" ls-files -z | tr '\0' '\n')
		else
			leaked=" (cannot list the clone's files: no git repository)"
		fi
		# As the workspace entrypoint: a pattern without / matches a name at
		# any depth; the last match decides; !pattern takes a file back out.
		local hit neg name
		while IFS= read -r f; do
			[[ -n $f ]] || continue
			hit=
			while IFS= read -r p; do
				neg=${p#!}
				if [[ $neg == */* ]]; then name=$f; else name=${f##*/}; fi
				# shellcheck disable=SC2053 # $neg is a glob
				[[ $name == $neg ]] && { [[ $neg == "$p" ]] && hit=1 || hit=; }
			done <<<"$hidden"
			[[ -z $hit ]] || leaked+=" $f"
		done <<<"$tracked"
		if [[ -z $leaked ]]; then
			report PASS files "hidden files" "look for workspace.hidden files in the clone" "none"
		else
			report FAIL files "hidden files" "look for workspace.hidden files in the clone" "tracked:$leaked"
		fi
	else
		report SKIP files "hidden files" "look for workspace.hidden files in the clone" "workspace.hidden is empty"
	fi
	what="docker socket"
	if [[ -e /var/run/docker.sock || -e /run/docker.sock ]]; then
		report FAIL files "$what" "look for /var/run/docker.sock" "present"
	else
		report PASS files "$what" "look for /var/run/docker.sock" "absent"
	fi
}

# origin_files: the project's git database, which the agent's clone is
# made from, is read-only and its config masked.
origin_files() {
	if [[ ! -f $origin/HEAD ]]; then
		report FAIL files "read-only git database" "write in $origin (hooks, HEAD)" "no git database there"
	elif touch "$origin/hooks/$marker" 2>/dev/null || (: >>"$origin/HEAD") 2>/dev/null; then
		rm -f "$origin/hooks/$marker"
		report FAIL files "read-only git database" "write in $origin (hooks, HEAD)" "written"
	else
		report PASS files "read-only git database" "write in $origin (hooks, HEAD)" "refused"
	fi
	if [[ -f $origin/config ]] && ! grep -qv '^[[:space:]]*\(#.*\)\?$' "$origin/config"; then
		report PASS files "host git config" "read $origin/config" "comments only"
	else
		report FAIL files "host git config" "read $origin/config" "the host's configuration is readable"
	fi
}

# locked_files: a locked profile's promises. The clone and the root file
# system cannot be written; $output and /tmp can.
locked_files() {
	if touch "$workspace/$marker" 2>/dev/null || (: >>"$workspace/.git/HEAD") 2>/dev/null; then
		rm -f "$workspace/$marker"
		report FAIL files "read-only workspace" "write in $workspace (a file, .git/HEAD)" "written"
	else
		report PASS files "read-only workspace" "write in $workspace (a file, .git/HEAD)" "refused"
	fi
	if touch "$HOME/$marker" 2>/dev/null || touch "/var/tmp/$marker" 2>/dev/null; then
		rm -f "$HOME/$marker" "/var/tmp/$marker" 2>/dev/null
		report FAIL files "read-only root" "write in $HOME and /var/tmp" "written"
	else
		report PASS files "read-only root" "write in $HOME and /var/tmp" "refused"
	fi
	if echo x >"$output/$marker" 2>/dev/null && echo x >"/tmp/$marker" 2>/dev/null; then
		rm -f "$output/$marker" "/tmp/$marker"
		report PASS files "writable output" "write in $output and /tmp" "written"
	else
		report FAIL files "writable output" "write in $output and /tmp" "refused"
	fi
}

network() {
	local out start took host port
	case $network_mode in
	none)
		if getent ahosts "$unlisted_name" >/dev/null 2>&1; then
			report FAIL network "no name resolves" "resolve $unlisted_name" "resolved"
		else
			report PASS network "no name resolves" "resolve $unlisted_name" "no address"
		fi
		;;
	open)
		if getent ahosts "$unlisted_name" >/dev/null 2>&1; then
			report PASS network "every name resolves" "resolve $unlisted_name (unlisted) through the filter" "resolved"
		else
			report FAIL network "every name resolves" "resolve $unlisted_name (unlisted) through the filter" "$(unresolved "$unlisted_name")"
		fi
		;;
	*)
		if getent ahosts "$unlisted_name" >/dev/null 2>&1; then
			report FAIL network "unlisted name" "resolve $unlisted_name" "resolved"
		else
			report PASS network "unlisted name" "resolve $unlisted_name" "no address"
		fi
		;;
	esac
	if [[ $network_mode == open ]]; then
		open_network
	else
		closed_network
	fi
	split_hostport "$metadata_addr"
	if out=$(tcp "$host" "$port"); then
		report FAIL network "metadata" "connect to $metadata_addr" "$out"
	else
		report PASS network "metadata" "connect to $metadata_addr" "$out"
	fi
	# Ports below 1024 need privilege (Docker would let every uid bind them):
	# the agent cannot listen on a resolver's port 53 on loopback.
	local low
	low=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null)
	if [[ $low =~ ^[0-9]+$ ]] && ((low > 53)); then
		report PASS network "low ports" "read net.ipv4.ip_unprivileged_port_start" "$low: binding port 53 needs privilege"
	else
		report FAIL network "low ports" "read net.ipv4.ip_unprivileged_port_start" "${low:-unreadable}: any uid may bind port 53"
	fi
	if [[ -z $allowed ]]; then
		report SKIP network "allowed name" "connect to an allowed name" "the profile lists no name"
		if [[ $network_mode == allowlist ]]; then
			report SKIP network "other name at an allowed address" "ask an allowed name's address for another name" "the profile lists no name"
		fi
	else
		split_hostport "$allowed"
		if out=$(tcp "$host" "$port"); then
			report PASS network "allowed name" "connect to $allowed" "$out"
		else
			report FAIL network "allowed name" "connect to $allowed" "$out"
		fi
		if [[ $network_mode == allowlist ]]; then
			other_name "$host" "$port"
		fi
	fi
	[[ -z $forge ]] || git_door ${forge% *} ${forge#* }
}

# git_door HOST PORT: the git front door of HOST, on 127.0.0.1:PORT,
# refuses by itself a push to a repository that agentbox.yaml does not
# list: git's smart-HTTP request of one ref update, which nothing then
# sends to the forge.
git_door() {
	local tried="push agentbox-verify/probe to $1 through its front door (127.0.0.1:$2)" out
	out=$(timeout 6 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 3
		cmd="0000000000000000000000000000000000000000 1111111111111111111111111111111111111111 refs/heads/agentbox-verify-probe"
		len=$((4 + ${#cmd} + 1 + 14))
		printf "POST /agentbox-verify/probe.git/git-receive-pack HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/x-git-receive-pack-request\r\nContent-Length: %d\r\n\r\n%04x%s\0report-status\n0000" $((len + 4)) "$len" "$cmd" >&3
		tr -d "\000-\011\013-\037" <&3' _ "$2" 2>/dev/null)
	case $? in
	3) report FAIL network "git front door" "$tried" "could not connect" ;;
	*)
		if [[ $out == *"not allowed"* ]]; then
			report PASS network "git front door" "$tried" "refused by the gateway"
		else
			report FAIL network "git front door" "$tried" "answered: $(head -n 1 <<<"$out")"
		fi
		;;
	esac
}

# other_name HOST PORT: at an allowed name's address, a request that names
# another name (HTTP Host: the unlisted name) gets no answer: the gateway
# checks the name each connection carries, not only its address.
other_name() {
	local tried="ask $1:$2 for $unlisted_name (HTTP Host)" out status
	if ! is_name "$1"; then
		report SKIP network "other name at an allowed address" "$tried" "$1 is an address: the gateway judges names"
		return
	fi
	out=$(timeout 6 bash -c 'exec 3<>"/dev/tcp/$1/$2" || exit 3
		printf "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" "$3" >&3
		IFS= read -r -t 5 line <&3 && printf "%s" "${line%$'"'"'\r'"'"'}"' _ "$1" "$2" "$unlisted_name" 2>/dev/null)
	status=$?
	case $status in
	0) report FAIL network "other name at an allowed address" "$tried" "answered: ${out:0:60}" ;;
	3) report FAIL network "other name at an allowed address" "$tried" "could not connect" ;;
	*) report PASS network "other name at an allowed address" "$tried" "closed with no answer" ;;
	esac
}

# open_network: under open, an unlisted address connects.
open_network() {
	local out
	split_hostport "$unlisted_addr"
	if out=$(tcp "$host" "$port"); then
		report PASS network "public address" "connect to $unlisted_addr (unlisted)" "$out"
	else
		report FAIL network "public address" "connect to $unlisted_addr (unlisted)" "$out"
	fi
}

# closed_network: an unlisted address is refused at once, another resolver
# answers with the filter's NXDOMAIN, IPv6 is refused.
closed_network() {
	local out start took
	split_hostport "$unlisted_addr"
	start=$(ms); out=$(tcp "$host" "$port"); took=$(($(ms) - start))
	if [[ $out == refused* || $out == "no network/upstream"* ]] && ((took < 1000)); then
		report PASS network "unlisted address" "connect to $unlisted_addr" "$out in $took ms"
	else
		report FAIL network "unlisted address" "connect to $unlisted_addr" "$out in $took ms"
	fi
	out=$(dns_tcp "$resolver" "$unlisted_name")
	if [[ $out == NXDOMAIN ]]; then
		report PASS network "other resolver" "ask $resolver for $unlisted_name" "the filter's NXDOMAIN"
	else
		report FAIL network "other resolver" "ask $resolver for $unlisted_name" "$out"
	fi
	split_hostport "$ipv6_addr"
	if out=$(tcp "$host" "$port"); then
		report FAIL network "IPv6" "connect to $ipv6_addr" "$out"
	else
		report PASS network "IPv6" "connect to $ipv6_addr" "$out"
	fi
}

privileges() {
	local caps nnp
	caps=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
	if [[ $caps =~ ^0+$ ]]; then
		report PASS privileges "capabilities" "read CapEff" "none"
	else
		report FAIL privileges "capabilities" "read CapEff" "$caps"
	fi
	nnp=$(awk '/^NoNewPrivs:/ {print $2}' /proc/self/status)
	if [[ $nnp == 1 ]]; then
		report PASS privileges "no_new_privs" "read NoNewPrivs" "set"
	else
		report FAIL privileges "no_new_privs" "read NoNewPrivs" "${nnp:-unknown}"
	fi
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		report FAIL privileges "sudo" "sudo -n true" "worked"
	else
		report PASS privileges "sudo" "sudo -n true" "not available"
	fi
	# Writes back the value it read: even where the write is allowed, nothing
	# changes.
	local fwd
	fwd=$(</proc/sys/net/ipv4/ip_forward)
	if (echo "$fwd" >/proc/sys/net/ipv4/ip_forward) 2>/dev/null; then
		report FAIL privileges "network settings" "write /proc/sys/net" "written"
	else
		report PASS privileges "network settings" "write /proc/sys/net (the ruleset needs CAP_NET_ADMIN, which the agent lacks)" "refused"
	fi
	# Spawn past the pids limit in a subshell: forks must fail, and we survive.
	# A child shell prints the pid of each process it starts until fork
	# fails; the count is what started.
	local out spawned
	local -a children
	# dash, not bash: bash retries a failed fork for 15 s (1+2+4+8 s of
	# sleeps), dash gives up at once.
	out=$(sh -c 'i=0; while [ "$i" -lt "$1" ]; do sleep 30 >/dev/null 2>&1 & echo "$!"; i=$((i + 1)); done' _ $((pids + 16)) 2>/dev/null)
	read -ra children <<<"${out//$'\n'/ }"
	spawned=${#children[@]}
	((spawned > 0)) && kill "${children[@]}" 2>/dev/null
	if ((spawned < pids + 16)); then
		report PASS privileges "pids limit" "start $((pids + 16)) processes" "stopped at $spawned; the container survives"
	else
		report FAIL privileges "pids limit" "start $((pids + 16)) processes" "all started"
	fi
}

resources() {
	# Allocate past the memory limit in a child: it must be killed, not us.
	local status
	# dd's one block of that size is allocated and filled by the kernel:
	# as fast as memory, where a shell string took seconds per GiB. One
	# read(2) returns at most 2 GiB: iflag=fullblock reads again until the
	# block is full (without it, a 4g limit is never reached).
	dd if=/dev/zero of=/dev/null bs=$((memory_bytes + 64 * 1024 * 1024)) count=1 iflag=fullblock >/dev/null 2>&1
	status=$?
	if ((status == 137)); then
		report PASS resources "memory limit" "allocate $((memory_bytes / 1048576 + 64)) MiB" "killed; the container survives"
	else
		report FAIL resources "memory limit" "allocate $((memory_bytes / 1048576 + 64)) MiB" "exit $status"
	fi
}

persistence() {
	case $1 in
	write)
		echo x >"$HOME/$marker" && echo x >"$workspace/$marker" &&
			{ [[ -z $state_dir ]] || echo x >"$state_dir/$marker"; } ||
			{ echo "verify.sh: cannot write the persistence markers" >&2; exit 1; }
		;;
	check)
		if [[ -e $HOME/$marker ]]; then
			report FAIL persistence "outside the workspace" "a file in $HOME across a restart" "kept"
		else
			report PASS persistence "outside the workspace" "a file in $HOME across a restart" "gone"
		fi
		if [[ -e $workspace/$marker ]]; then
			report PASS persistence "workspace" "a file in the workspace across a restart" "kept"
		else
			report FAIL persistence "workspace" "a file in the workspace across a restart" "gone"
		fi
		if [[ -n $state_dir ]]; then
			if [[ -e $state_dir/$marker ]]; then
				report PASS persistence "state volume" "a file in $state_dir across a restart" "kept"
			else
				report FAIL persistence "state volume" "a file in $state_dir across a restart" "gone"
			fi
		fi
		rm -f -- "$HOME/$marker" "$workspace/$marker"
		[[ -z $state_dir ]] || rm -f -- "$state_dir/$marker"
		;;
	esac
}

case $phase in
all) files; network; privileges; resources ;;
files | network | privileges | resources) "$phase" ;; # one area alone (tests, debugging)
write) persistence write ;;
check) persistence check ;;
*) echo "verify.sh: unknown phase $phase" >&2; exit 2 ;;
esac
exit 0 # every probe reported its result; failures are rows, not an exit status
