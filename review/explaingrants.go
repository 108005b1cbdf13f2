package review

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// TimeLimits are how long a task of agentbox run may take.
type TimeLimits struct {
	Timeout       string `json:"timeout"`     // a task's deadline without --timeout
	MaxTimeout    string `json:"max_timeout"` // the longest --timeout
	TimeoutOrigin Origin `json:"timeout_origin"`
	MaxOrigin     Origin `json:"max_timeout_origin"`
}

// ElevationView is what agentbox allow may grant: under the balanced
// profile (the top-level elevation section), or under one profile.
type ElevationView struct {
	Allowed       bool        `json:"allowed"`
	MaxDuration   string      `json:"max_duration"` // the longest --for
	Never         []NeverRule `json:"never"`        // elevation.never, as written
	AllowedOrigin Origin      `json:"allowed_origin"`
	MaxOrigin     Origin      `json:"max_duration_origin"`
	// RequestTimeout is how long an agent's request for a grant waits for
	// a person's answer.
	RequestTimeout       string `json:"request_timeout"`
	RequestTimeoutOrigin Origin `json:"request_timeout_origin"`
}

// NeverRule is one entry of elevation.never: a CIDR or a name that agentbox
// allow refuses (on top of the ranges it always refuses).
type NeverRule struct {
	Entry string `json:"entry"`
	Origin
}

// DevContainerView is what the Dev Container adds: the IDE (whose domains
// join the allowlist) and the VS Code extensions it installs, which run in
// the agent container.
type DevContainerView struct {
	IDE        string          `json:"ide"`
	IDEOrigin  Origin          `json:"ide_origin"`
	Extensions []ExtensionView `json:"extensions"` // the configured ones and the agent's, sorted
}

// ExtensionView is one VS Code extension of the Dev Container.
type ExtensionView struct {
	ID string `json:"id"`
	Origin
}

// KubernetesView is where the sandbox runs on a cluster; nil without the
// kubernetes section.
type KubernetesView struct {
	Namespace string `json:"namespace"`
	Registry  string `json:"registry"` // where the cluster's nodes pull the images from
	TTL       string `json:"ttl_after_finished"`
	Origin
}

func (o origins) time() TimeLimits {
	return TimeLimits{Timeout: config.FormatTaskDuration(o.cfg.RunTimeout), MaxTimeout: config.FormatTaskDuration(o.cfg.RunMaxTimeout),
		TimeoutOrigin: o.at("run.timeout"), MaxOrigin: o.at("run.max_timeout")}
}

// elevation describes e, the elevation of the profile whose section is at
// path ("elevation" for the top level). A key the profile does not write
// cites the top-level key it inherits.
func (o origins) elevation(path string, e config.Elevation) ElevationView {
	key := func(k string) Origin {
		if orig := o.at(path + "." + k); orig.Line != 0 || path == "elevation" {
			return orig
		}
		return o.at("elevation." + k)
	}
	v := ElevationView{Allowed: e.Allowed, MaxDuration: config.FormatTaskDuration(e.Max), Never: []NeverRule{},
		AllowedOrigin: key("allowed"), MaxOrigin: key("max_duration"),
		RequestTimeout: config.FormatTaskDuration(e.RequestTimeout), RequestTimeoutOrigin: key("request_timeout")}
	for i, p := range e.Never {
		v.Never = append(v.Never, NeverRule{Entry: prefixString(p), Origin: o.entryAt(path+".never", e.NeverPos[i])})
	}
	for i, n := range e.NeverNames {
		v.Never = append(v.Never, NeverRule{Entry: n, Origin: o.entryAt(path+".never", e.NeverNamesPos[i])})
	}
	if len(e.Never)+len(e.NeverNames) > 0 && v.Never[0].Line == 0 && path != "elevation" {
		for i := range v.Never { // inherited: the top-level entries
			v.Never[i].Origin = o.entryAt("elevation.never", posOf(o.cfg, v.Never[i].Entry))
		}
	}
	slices.SortStableFunc(v.Never, func(a, b NeverRule) int { return a.Line - b.Line })
	return v
}

// posOf finds where the top-level elevation.never entry is written.
func posOf(cfg *config.Config, entry string) yamlpos.Pos {
	for i, p := range cfg.ElevationNever {
		if prefixString(p) == entry {
			return cfg.ElevationNeverPos[i]
		}
	}
	for i, n := range cfg.ElevationNeverNames {
		if n == entry {
			return cfg.ElevationNeverNamesPos[i]
		}
	}
	return yamlpos.Pos{}
}

// prefixString is a prefix, a single address without its length.
func prefixString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// entryAt is the key of the entry of list written at pos: the file's own
// index, as the loader names it.
func (o origins) entryAt(list string, pos yamlpos.Pos) Origin {
	if pos.Line == 0 {
		return o.at(list)
	}
	for k, p := range o.pos {
		if p == pos && strings.HasPrefix(k, list+"[") && !strings.Contains(k[len(list):], ".") {
			return Origin{Key: k, Line: p.Line}
		}
	}
	return Origin{Key: list, Line: pos.Line}
}

func (o origins) devcontainer(p *generator.Plan) DevContainerView {
	v := DevContainerView{IDE: o.cfg.IDE, IDEOrigin: o.at("devcontainer.ide"), Extensions: []ExtensionView{}}
	for _, id := range p.Extensions {
		orig := o.at("agent") // the agent's own extension
		for i, e := range o.cfg.Extensions {
			if strings.EqualFold(e, id) {
				orig = o.at(fmt.Sprintf("devcontainer.extensions[%d]", i))
				break
			}
		}
		v.Extensions = append(v.Extensions, ExtensionView{ID: id, Origin: orig})
	}
	return v
}

func (o origins) kubernetes() *KubernetesView {
	k := o.cfg.Kubernetes
	if k == nil {
		return nil
	}
	return &KubernetesView{Namespace: k.Namespace, Registry: k.Registry, TTL: config.FormatTaskDuration(k.TTLAfterFinished),
		Origin: o.at("kubernetes")}
}

// seconds is a duration written as FormatTaskDuration writes it.
func seconds(s string) float64 {
	d, err := config.ParseTaskDuration(s)
	if err != nil {
		return 0
	}
	return d.Seconds()
}
