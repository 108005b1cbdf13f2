package config

import (
	"fmt"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// ImageSpec is one image the sandbox is built from, and where it comes from.
type ImageSpec struct {
	Ref  images.Ref
	What string // for messages
	Path string // key path in agentbox.yaml, "" for a default not tied to a key
	Pos  yamlpos.Pos
}

// ImageSpecs returns the agent's and the egress image, configured or default.
func (cfg *Config) ImageSpecs() []ImageSpec {
	spec := func(ref *images.Ref, pos yamlpos.Pos, path, def, defWhat string, defPos yamlpos.Pos, defPath string) ImageSpec {
		if ref != nil {
			return ImageSpec{Ref: *ref, What: fmt.Sprintf("image %q", ref.String()), Path: path, Pos: pos}
		}
		r, err := images.ParseRef(def)
		if err != nil {
			panic(err) // the catalog is tested
		}
		return ImageSpec{Ref: r, What: fmt.Sprintf("%s %q", defWhat, def), Path: defPath, Pos: defPos}
	}
	// An image that no key selects is placed at the start of the file.
	fileStart := yamlpos.Pos{Line: 1, Col: 1}
	agentPath, agentPos := "", fileStart
	if cfg.AgentPos.Line != 0 {
		agentPath, agentPos = "agent", cfg.AgentPos
	}
	return []ImageSpec{
		spec(cfg.Base, cfg.BasePos, "image.base", cfg.Agent.BaseImage,
			fmt.Sprintf("the default base image of agent %s", cfg.Agent.Name), agentPos, agentPath),
		spec(cfg.Egress, cfg.EgressPos, "egress.image", catalog.DefaultEgressImage,
			"the default egress image", fileStart, ""),
	}
}
