package review

import (
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
)

// explainSource explains an agentbox.yaml and agentbox.lock held in memory,
// as diff explains its base.
func explainSource(yml, lock string) (*Sandbox, error) {
	c, err := generator.Compile(".", generator.CompileOptions{Until: generator.Planned, Source: &generator.Source{File: config.ConfigFile, Config: []byte(yml), Lock: []byte(lock)}})
	if err != nil {
		return nil, err
	}
	return Explain(c)
}
