package generator

import (
	"testing"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/configtest"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// TestAtLimitsGenerates: the largest file the loader (and so validate)
// accepts plans, renders and passes every check of generate: compose-go's
// node limit, the Dockerfile and shell parsers.
func TestAtLimitsGenerates(t *testing.T) {
	src := configtest.AtLimits(config.MaxEntries, config.MaxEnvString, firewall.GatewayListenMax)
	if len(src) > config.MaxFileSize {
		t.Fatalf("the file at the limits is %d bytes, over MaxFileSize", len(src))
	}
	dir := t.TempDir()
	cfg, _, err := config.Decode(config.ConfigFile, []byte(src), dir)
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
	if err := check(files, dir, p.Name, nil); err != nil {
		t.Fatal(err)
	}
}
