package main

import (
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/npm"
)

// publish serves name@version with engines.node and dependencies.
func (h *fakeHub) publish(name, version, engine string, deps map[string]string) {
	if h.docs == nil {
		h.docs = map[string]*npm.Packument{}
	}
	sum := sha512.Sum512([]byte(name + "@" + version))
	m := npm.Manifest{Name: name, Version: version, Dependencies: deps, Bin: json.RawMessage(`"cli.js"`),
		Dist: npm.Dist{Integrity: "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}}
	if engine != "" {
		m.Engines = json.RawMessage(`{"node":` + strings.TrimSpace(string(mustJSON(engine))) + `}`)
	}
	h.docs[name] = &npm.Packument{Name: name, DistTags: map[string]string{"latest": version}, Versions: map[string]npm.Manifest{version: m}}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestBumpNodeEngines: bump refuses an agent CLI whose engines.node the
// image's Node does not meet (the base image's, for a node:<version> tag;
// else Debian's nodejs, which agentbox installs), at the key that chose
// the base image, and writes nothing; a dependency's unmet engines.node is
// a warning.
func TestBumpNodeEngines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, cli, dep string
		code                 int
		want                 []string
	}{
		{"node tag too old", "agent: claude\n", ">=26", "", exitError,
			[]string{"agentbox.yaml:1:8:", `@anthropic-ai/claude-code@2.1.0 needs Node ">=26"`, "Node 24", "node:24-bookworm-slim", "node:26-bookworm-slim"}},
		{"debian nodejs too old", "agent: claude\nimage:\n  base: debian:bookworm-slim\n", ">=20", "", exitError,
			[]string{"agentbox.yaml:3:9:", `needs Node ">=20"`, "nodejs 18.19.0", "debian:bookworm-slim", "node:20-bookworm-slim"}},
		{"met", "agent: claude\n", ">=22.0.0", "", exitOK, nil},
		{"dependency", "agent: claude\n", ">=22", ">=25", exitOK,
			[]string{"warning", `dep@1.0.0 needs Node ">=25"`, "Node 24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newFakeHub(t)
			h.push("node:24-bookworm-slim", "node-1", true)
			h.push("debian:bookworm-slim", "debian-1", true)
			h.publish("@anthropic-ai/claude-code", "2.1.0", tc.cli, map[string]string{"dep": "^1"})
			h.publish("dep", "1.0.0", tc.dep, nil)
			dir := bumpProject(t, tc.yaml, "")
			_, stderr, code := h.run(t, dir, "bump")
			if code != tc.code {
				t.Fatalf("bump: exit %d, want %d: %s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			_, err := os.Stat(filepath.Join(dir, "agentbox.lock"))
			if tc.code != exitOK && err == nil {
				t.Error("a refused bump wrote agentbox.lock")
			}
			if tc.code == exitOK && tc.dep == "" && strings.Contains(stderr, "warning") {
				t.Errorf("a warning with every engine met:\n%s", stderr)
			}
		})
	}
}
