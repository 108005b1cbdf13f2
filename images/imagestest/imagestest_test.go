package imagestest

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/images"
)

func TestFakesFailLoudly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const d = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	r := Resolver{"index.docker.io/library/debian:bookworm-slim": d}
	ref, err := images.ParseRef("debian:bookworm-slim")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Resolve(ctx, ref); err != nil || got != d {
		t.Errorf("Resolve(%s) = %q, %v", ref, got, err)
	}
	if got, err := r.Resolve(ctx, ref.WithDigest(d)); err != nil || got != d {
		t.Errorf("Resolve(pinned) = %q, %v", got, err)
	}
	other, _ := images.ParseRef("alpine:3")
	if _, err := r.Resolve(ctx, other); err == nil || !strings.Contains(err.Error(), `unknown reference "alpine:3"`) {
		t.Errorf("an unknown reference: %v", err)
	}
	wrong := ref.WithDigest("sha256:" + strings.Repeat("f", 64))
	if _, err := r.Resolve(ctx, wrong); err == nil {
		t.Error("a digest the fake does not hold resolved")
	}
	n := NPM{"@openai/codex": "0.60.1"}
	if v, err := n.Latest(ctx, "@openai/codex"); err != nil || v != "0.60.1" {
		t.Errorf("Latest = %q, %v", v, err)
	}
	if _, err := n.Latest(ctx, "left-pad"); err == nil || !strings.Contains(err.Error(), `unknown package "left-pad"`) {
		t.Errorf("an unknown package: %v", err)
	}
	o := OSReleases{"index.docker.io/library/debian:bookworm-slim@" + d: {ID: "debian", VersionCodename: "bookworm"}}
	if got, err := o.OSRelease(ctx, ref, d); err != nil || got.VersionCodename != "bookworm" {
		t.Errorf("OSRelease = %+v, %v", got, err)
	}
	if _, err := o.OSRelease(ctx, ref, "sha256:"+strings.Repeat("f", 64)); err == nil || !strings.Contains(err.Error(), "unknown image") {
		t.Errorf("an unknown digest: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Resolve(canceled, ref); err == nil {
		t.Error("Resolve ignored a canceled context")
	}
	if _, err := o.OSRelease(canceled, ref, d); err == nil {
		t.Error("OSRelease ignored a canceled context")
	}
}
