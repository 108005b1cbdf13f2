package generator

import (
	"bytes"
	"slices"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// TestRunSectionChangesNoFile: the run section is for agentbox run alone;
// the generated sandbox is the same with it or without it, but for the
// model keys of run.env, which the gateway of a task's egress holds: they
// are in egress's haproxy.cfg and policy.bash (docs/gateway.md), and in
// nothing of the agent's.
func TestRunSectionChangesNoFile(t *testing.T) {
	renderString := func(src string) map[string][]byte {
		t.Helper()
		cfg, err := loadString(t, src)
		if err != nil {
			t.Fatal(err)
		}
		errs := &yamlpos.Errors{File: config.ConfigFile}
		p := plan(cfg, fakeLock(cfg), errs)
		if err := errs.Err(); err != nil {
			t.Fatal(err)
		}
		files, err := render(p)
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	base := "agent: claude\nenv: {A: b}\n"
	without := renderString(base)
	with := renderString(base + "run: {timeout: 1h, max_timeout: 168h, env: [ANTHROPIC_API_KEY, GH_TOKEN]}\n")
	if len(with) != len(without) {
		t.Fatalf("%d files with the run section, %d without", len(with), len(without))
	}
	gateway := []string{EgressDir + "/haproxy.cfg", EgressDir + "/policy.bash"}
	for path, data := range without {
		if !bytes.Equal(with[path], data) && !slices.Contains(gateway, path) {
			t.Errorf("%s changes with the run section", path)
		}
	}
	noKey := renderString(base + "run: {timeout: 1h, max_timeout: 168h, env: [GH_TOKEN]}\n")
	for path, data := range without {
		if !bytes.Equal(noKey[path], data) {
			t.Errorf("%s changes with a run section without model keys", path)
		}
	}
}
