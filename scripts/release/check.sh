#!/usr/bin/env bash
# Checks the dist/ of a goreleaser release or snapshot: checksums.txt verifies;
# each of the four archives holds agentbox built for its platform (file(1)); the
# linux/amd64 binary (on an amd64 machine) says the release's version; the
# Homebrew formula renders from the checksums.
#   scripts/release/check.sh DIST
set -euo pipefail

dist=${1:?usage: check.sh DIST}
die() { echo "release check: $*" >&2; exit 1; }

version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
[[ -n $version ]] || die "$dist/metadata.json: no version"
(cd "$dist" && sha256sum --quiet --strict -c checksums.txt) || die "$dist/checksums.txt does not verify"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A want=(
	[linux_amd64]='ELF 64-bit LSB executable, x86-64'
	[linux_arm64]='ELF 64-bit LSB executable, ARM aarch64'
	[darwin_amd64]='Mach-O 64-bit x86_64 executable'
	[darwin_arm64]='Mach-O 64-bit arm64 executable'
)
for platform in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64; do
	name="agentbox_${version}_$platform.tar.gz"
	grep -q "  $name\$" "$dist/checksums.txt" || die "checksums.txt does not name $name"
	mkdir "$tmp/$platform"
	tar -xzf "$dist/$name" -C "$tmp/$platform" agentbox || die "$name holds no agentbox"
	desc=$(file -b "$tmp/$platform/agentbox")
	[[ $desc == "${want[$platform]}"* ]] || die "$name: agentbox is $desc, want ${want[$platform]}"
	echo "release check: $name: $desc"
done

if [[ $(uname -m) == x86_64 ]]; then
	got=$("$tmp/linux_amd64/agentbox" version)
	[[ $got == "agentbox v$version" || $got == "agentbox v$version ("* ]] ||
		die "agentbox version of the linux/amd64 archive says \"$got\", want agentbox v$version"
	echo "release check: agentbox version: $got"
fi

bash "$(dirname "$0")/formula.sh" "$dist" >"$tmp/agentbox.rb"
[[ $(grep -c '^      sha256 "[0-9a-f]\{64\}"$' "$tmp/agentbox.rb") == 4 ]] || die "the formula does not name four archives"
echo "release check: $dist: $(wc -l <"$dist/checksums.txt") archives, checksums verify, formula renders"
