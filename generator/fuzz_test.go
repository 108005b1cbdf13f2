package generator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/npm"
	"github.com/agentbox-dev/agentbox/internal/testing/configtest"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/agentbox-dev/agentbox/lockfile"
)

// FuzzLoad feeds arbitrary bytes to the loader. It must never panic; every
// error must be positioned in agentbox.yaml; and whatever it accepts must
// plan, render and pass every output check (config.FuzzDecode checks, on the
// same seeds, that it accepts no value that is not ASCII), since accepted values reach
// Dockerfiles, shell, compose and firewall configuration.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(goldenDir, "*", config.ConfigFile))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	for _, seed := range configtest.FuzzSeeds() {
		f.Add(seed)
	}
	dir := f.TempDir()
	placed := configtest.Placed(config.ConfigFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := config.Decode(config.ConfigFile, data, dir)
		if err != nil {
			es, ok := err.(*yamlpos.Errors)
			if !ok {
				t.Fatalf("unpositioned error type %T: %v", err, err)
			}
			for _, line := range strings.Split(es.Error(), "\n") {
				if !placed.MatchString(line) {
					t.Fatalf("error without a place (file:line:col, or file:line for a YAML syntax error): %q", line)
				}
			}
			return
		}
		errs := &yamlpos.Errors{File: config.ConfigFile}
		p := plan(cfg, fakeLock(cfg), errs)
		if err := errs.Err(); err != nil {
			t.Fatalf("the loader (and so validate) accepts what plan refuses with a complete lock: %v\n%s", err, data)
		}
		files, err := render(p)
		if err != nil {
			t.Fatalf("accepted config does not render: %v\n%s", err, data)
		}
		if err := check(files, dir, p.Name, nil); err != nil {
			t.Fatalf("accepted config renders files that fail their checks: %v\n%s", err, data)
		}
	})
}

// fakeLock pins every image and package cfg needs.
func fakeLock(cfg *config.Config) *lockfile.Lock {
	const d = "sha256:" + "abababababababababababababababababababababababababababababababab"
	l := &lockfile.Lock{FormatVersion: lockfile.Version, Images: map[string]string{}, NPM: map[string]*npm.Tree{},
		Debian: &lockfile.Debian{Snapshot: "20261101T000000Z", SecuritySnapshot: "20261101T060000Z",
			Releases: map[string]string{}, Pins: map[string]map[string]lockfile.ArchPins{"bookworm": {}}}}
	for _, r := range []*images.Ref{cfg.Base, cfg.Egress} {
		if r != nil {
			l.Images[r.Tagged()] = d
			l.Debian.Releases[r.Tagged()] = "bookworm"
		}
	}
	l.Images[cfg.Agent.BaseImage] = d
	l.Images[catalog.DefaultEgressImage] = d
	l.Debian.Releases[cfg.Agent.BaseImage] = "bookworm"
	l.Debian.Releases[catalog.DefaultEgressImage] = "bookworm"
	agent, node, egress := DebianNames(cfg)
	versions := map[string]string{}
	for _, n := range slices.Concat(agent, node, egress) {
		name, v, _ := strings.Cut(n, "=")
		if v == "" {
			v = "1.0-1"
		}
		versions[name] = v
	}
	for _, arch := range lockfile.Architectures {
		l.Debian.Pins["bookworm"][arch] = lockfile.ArchPins{Closure: "sha256:" + strings.Repeat("cd", 32), Versions: versions}
	}
	if pkg := cfg.Agent.Package; pkg != "" {
		l.NPM[pkg] = &npm.Tree{Name: pkg, Version: "1.0.0", Packages: map[string]npm.Entry{
			"node_modules/" + pkg: {Version: "1.0.0", Integrity: "sha512-" + strings.Repeat("A", 86) + "==", Bin: map[string]string{"cli": "cli.js"}}}}
	}
	return l
}
