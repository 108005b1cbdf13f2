# Rendered by scripts/release/formula.sh from the release's checksums.txt; do not edit.
class Agentbox < Formula
  desc "Run AI coding agents in a locked-down local container sandbox"
  homepage "https://github.com/agentbox-dev/agentbox"

  head do
    url "https://github.com/agentbox-dev/agentbox.git", branch: "main"
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
