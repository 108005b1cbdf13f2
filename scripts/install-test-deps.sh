#!/usr/bin/env bash
# Installs what the tests need on a Debian machine: nftables (nft -c checks of
# every generated ruleset), dnsmasq-base (dnsmasq --test of every generated
# configuration), and for the firewall's network lab iproute2 (namespaces,
# veth), util-linux (setpriv, unshare, nsenter, flock), mount, and ulogd2 with
# ulogd2-json (the record of refused packets, TestLabRefusedLog), haproxy (the
# gateway, TestLabGateway); shellcheck
# (actionlint runs it on the scripts of the CI workflow); npm (the real npm ci
# installs the package-lock.json that agentbox renders); file (make release-check
# names each archive's platform). Without root it installs
# nothing and says so; the tests that need these then skip, except under CI=true,
# where they fail.
set -euo pipefail

need=()
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v dnsmasq >/dev/null 2>&1 || [ -x /usr/sbin/dnsmasq ] || need+=(dnsmasq-base)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
for tool in setpriv unshare nsenter flock; do
	command -v "$tool" >/dev/null 2>&1 || { need+=(util-linux); break; }
done
command -v mount >/dev/null 2>&1 || need+=(mount)
{ command -v ulogd >/dev/null 2>&1 || [ -x /usr/sbin/ulogd ]; } || need+=(ulogd2)
dpkg -s ulogd2-json >/dev/null 2>&1 || need+=(ulogd2-json)
{ command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; } || need+=(haproxy)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v file >/dev/null 2>&1 || need+=(file)
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-test-deps: missing ${need[*]}; not root or no apt-get, so tests that need them will skip" >&2
	exit 0
fi
echo "install-test-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
