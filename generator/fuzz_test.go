package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// FuzzLoad feeds arbitrary bytes to the loader. It must never panic; every
// error must be positioned in agentbox.yaml; and whatever it accepts must
// plan, render and pass every output check, since accepted values reach
// Dockerfiles, shell, compose and firewall configuration.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(goldenDir, "*", ConfigFile))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("agent: claude\nenv: {A: \"$(id)\\n'\"}\n"))
	f.Add([]byte("network: {domains: [{host: a.b, ports: [1, 65535]}], cidrs: [::1]}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := decodeConfig(ConfigFile, data, dir)
		if err != nil {
			es, ok := err.(*yamlpos.Errors)
			if !ok {
				t.Fatalf("unpositioned error type %T: %v", err, err)
			}
			for _, line := range strings.Split(es.Error(), "\n") {
				if !strings.HasPrefix(line, ConfigFile+":") {
					t.Fatalf("error without the file name: %q", line)
				}
			}
			return
		}
		errs := &yamlpos.Errors{File: ConfigFile}
		p := plan(cfg, fakeLock(cfg), errs)
		if err := errs.Err(); err != nil {
			return // e.g. a package listed with two versions
		}
		files, err := render(p)
		if err != nil {
			t.Fatalf("accepted config does not render: %v\n%s", err, data)
		}
		if err := check(files, dir, p.Name); err != nil {
			t.Fatalf("accepted config renders files that fail their checks: %v\n%s", err, data)
		}
	})
}

// fakeLock pins every image and package cfg needs.
func fakeLock(cfg *Config) *images.Lock {
	const d = "sha256:" + "abababababababababababababababababababababababababababababababab"
	l := &images.Lock{Images: map[string]string{}, NPM: map[string]string{}}
	for _, r := range []*images.Ref{cfg.Base, cfg.Egress} {
		if r != nil {
			l.Images[r.Tagged()] = d
		}
	}
	l.Images[cfg.Agent.BaseImage] = d
	l.Images[images.DefaultEgressImage] = d
	if cfg.Agent.Package != "" {
		l.NPM[cfg.Agent.Package] = "1.0.0"
	}
	return l
}
