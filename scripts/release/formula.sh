#!/usr/bin/env bash
# Prints the Homebrew formula of agentbox (Formula/agentbox.rb). With DIST, the
# dist/ directory of `goreleaser release`, the formula installs that release's
# archives (their names as .goreleaser.yaml makes them, their sha256 from
# checksums.txt; an archive missing from it is an error); without, it builds
# from the main branch only (brew install --HEAD).
#   scripts/release/formula.sh [DIST] > Formula/agentbox.rb
set -euo pipefail

repo=https://github.com/agentbox-dev/agentbox
dist=${1:-}

die() { echo "formula.sh: $*" >&2; exit 1; }

# sum NAME: the sha256 of archive NAME in $dist/checksums.txt.
sum() {
	local s
	s=$(awk -v n="$1" '$2 == n { print $1 }' "$dist/checksums.txt")
	[[ $s =~ ^[0-9a-f]{64}$ ]] || die "$dist/checksums.txt has no sha256 of $1"
	printf '%s' "$s"
}

# archive OS ARCH: the url and sha256 lines of one archive.
archive() {
	local name="agentbox_${version}_$1_$2.tar.gz"
	printf '      url "%s/releases/download/v%s/%s"\n' "$repo" "$version" "$name"
	printf '      sha256 "%s"\n' "$(sum "$name")"
}

echo '# Rendered by scripts/release/formula.sh from the release'"'"'s checksums.txt; do not edit.'
echo 'class Agentbox < Formula'
echo '  desc "Run AI coding agents in a locked-down local container sandbox"'
echo "  homepage \"$repo\""
if [[ -n $dist ]]; then
	[[ -f $dist/metadata.json && -f $dist/checksums.txt ]] || die "$dist: no metadata.json and checksums.txt of a goreleaser release"
	version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
	[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+[-+0-9A-Za-z.]*$ ]] || die "$dist/metadata.json: no version"
	echo "  version \"$version\""
	echo
	echo '  on_macos do'
	echo '    on_arm do'
	archive darwin arm64
	echo '    end'
	echo '    on_intel do'
	archive darwin amd64
	echo '    end'
	echo '  end'
	echo '  on_linux do'
	echo '    on_arm do'
	archive linux arm64
	echo '    end'
	echo '    on_intel do'
	archive linux amd64
	echo '    end'
	echo '  end'
fi
cat <<RUBY

  head do
    url "$repo.git", branch: "main"
    depends_on "go" => :build
  end

  def install
    if build.head?
      system "go", "build", *std_go_args(ldflags: "-s -w"), "./cmd/agentbox"
    else
      bin.install "agentbox"
    end
    generate_completions_from_executable(bin/"agentbox", "completion")
  end

  test do
    out = shell_output("#{bin}/agentbox version")
    if head?
      assert_match(/^agentbox /, out)
    else
      assert_equal "agentbox v#{version}\n", out
    end
  end
end
RUBY
