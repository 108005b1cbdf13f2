package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/images"
	"github.com/agentbox-dev/agentbox/internal/gitgate"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// dnsPort is DNS's port: the firewall redirects it to the filter resolver.
const dnsPort = 53

// checker converts the wire form into a Config, recording every problem.
type checker struct {
	pos  yamlpos.Positions
	errs *yamlpos.Errors
}

func (c *checker) fail(path string, err error) {
	c.errs.Add(c.pos[path], path, "%v", err)
}

func (c *checker) failf(path, format string, args ...any) {
	c.errs.Add(c.pos[path], path, format, args...)
}

// validateConfig checks w and returns the model. The project directory dir
// does not enter the model: the files depend on agentbox.yaml alone.
func validateConfig(w *wireFile, pos yamlpos.Positions, errs *yamlpos.Errors, dir string) *Config {
	c := &checker{pos: pos, errs: errs}
	cfg := &Config{}
	c.project(w, cfg)
	c.image(w, cfg)
	c.network(w, cfg)
	c.resources(w, cfg)
	c.env(w.Env, cfg)
	c.secrets(w.Secrets, w.Env, cfg)
	c.workspacePaths(w.Workspace, cfg)
	c.workspace(w.Workspace, cfg)
	c.devcontainer(w.Devcontainer, cfg)
	c.verifyTargets(w.Verify, cfg)
	c.gitIdentity(w.Git, cfg)
	c.run(w.Run, w.Secrets, w.Env, cfg)
	c.gitForges(w.Git.Forges, cfg)
	c.elevation(w.Elevation, cfg)
	c.profiles(w, cfg)
	c.kubernetes(w.Kubernetes, cfg)
	return cfg
}

// project checks version, name and agent.
func (c *checker) project(w *wireFile, cfg *Config) {
	if w.Version != nil && *w.Version != 1 {
		c.failf("version", "unsupported version %d (this agentbox reads version 1)", *w.Version)
	}
	cfg.Name = DefaultName
	if w.Name != nil {
		cfg.Name = *w.Name
		if err := validate.ProjectName(*w.Name); err != nil {
			c.fail("name", err)
		}
	}
	cfg.Agent, _ = catalog.LookupAgent("none")
	if w.Agent != nil {
		cfg.AgentPos = c.pos["agent"]
		if a, ok := catalog.LookupAgent(*w.Agent); ok {
			cfg.Agent = a
		} else {
			c.failf("agent", "%s", EnumError("agent", *w.Agent, catalog.AgentNames()))
		}
	}
}

// image checks image (base, packages, user) and egress.image.
func (c *checker) image(w *wireFile, cfg *Config) {
	cfg.Base, cfg.BasePos = c.ref("image.base", w.Image.Base)
	cfg.Egress, cfg.EgressPos = c.ref("egress.image", w.Egress.Image)
	if c.within("image.packages", len(w.Image.Packages)) {
		c.packages(w.Image.Packages)
	}
	cfg.Packages = w.Image.Packages
	for i := range cfg.Packages {
		cfg.PackagesPos = append(cfg.PackagesPos, c.pos[fmt.Sprintf("image.packages[%d]", i)])
	}
	cfg.UID = c.id("image.user.uid", w.Image.User.UID, DefaultUID)
	switch cfg.UID {
	case firewall.DNSUID:
		c.failf("image.user.uid", "uid %d is reserved for the filter resolver, whose traffic the firewall exempts", cfg.UID)
	case firewall.GatewayUID:
		c.failf("image.user.uid", "uid %d is reserved for the gateway, whose traffic the firewall exempts", cfg.UID)
	case firewall.RequestUID:
		c.failf("image.user.uid", "uid %d is reserved for the request endpoint, which writes the agent's requests for grants", cfg.UID)
	}
	cfg.GID = c.id("image.user.gid", w.Image.User.GID, cfg.UID)
}

// workspacePaths checks workspace.path and workspace.readonly.
func (c *checker) workspacePaths(w wireWorkspace, cfg *Config) {
	cfg.Workspace = DefaultWorkspace
	if w.Path != nil {
		cfg.Workspace = *w.Path
		if err := validate.ContainerPath(cfg.Workspace); err != nil {
			c.fail("workspace.path", err)
		}
	}
	for i, p := range entries(c, "workspace.readonly", w.ReadOnly) {
		path := fmt.Sprintf("workspace.readonly[%d]", i)
		if err := validate.RelPath(p); err != nil {
			c.fail(path, err)
		}
		cfg.ReadOnlyPos = append(cfg.ReadOnlyPos, c.pos[path])
	}
	cfg.ReadOnly = w.ReadOnly
}

// devcontainer checks devcontainer.ide and devcontainer.extensions.
func (c *checker) devcontainer(w wireDevcontainer, cfg *Config) {
	cfg.IDE = DefaultIDE
	if w.IDE != nil {
		cfg.IDE = *w.IDE
		if !slices.Contains(IDEs, cfg.IDE) {
			c.failf("devcontainer.ide", "%s", EnumError("ide", cfg.IDE, IDEs))
		}
	}
	for i, e := range entries(c, "devcontainer.extensions", w.Extensions) {
		if err := validate.Extension(e); err != nil {
			c.fail(fmt.Sprintf("devcontainer.extensions[%d]", i), err)
		}
	}
	cfg.Extensions = w.Extensions
}

func (c *checker) ref(path string, s *string) (*images.Ref, yamlpos.Pos) {
	if s == nil {
		return nil, yamlpos.Pos{}
	}
	r, err := images.ParseRef(*s)
	if err != nil {
		c.fail(path, err)
		return nil, c.pos[path]
	}
	return &r, c.pos[path]
}

func (c *checker) id(path string, v *int, def int) int {
	if v == nil {
		return def
	}
	switch {
	case *v == 0:
		c.failf(path, "the agent must not run as root (0)")
	case *v < 0 || *v > 65534:
		c.failf(path, "invalid id %d: must be 1-65534", *v)
	}
	return *v
}

func (c *checker) ports(path string, ps []int) []uint16 {
	if ps == nil {
		return nil
	}
	if len(ps) == 0 {
		c.failf(path, "an empty list of ports would allow nothing; leave ports out for the default")
	}
	ps = entries(c, path, ps)
	out := make([]uint16, 0, len(ps))
	for i, p := range ps {
		if err := validate.Port(p); err != nil {
			c.fail(fmt.Sprintf("%s[%d]", path, i), err)
			continue
		}
		if p == dnsPort {
			c.failf(fmt.Sprintf("%s[%d]", path, i), "port 53 (DNS) cannot be allowed: the firewall redirects every DNS packet to its filter resolver before any allow rule, so a rule for port 53 would never match; allowed names resolve through the filter without it")
			continue
		}
		out = append(out, uint16(p))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (c *checker) network(w *wireFile, cfg *Config) {
	n := c.networkRules("network", w.Network)
	cfg.Services, cfg.Domains, cfg.CIDRs, cfg.Ports = n.Services, n.Domains, n.CIDRs, n.Ports
}

// networkRules checks a network section at path (the top-level one or a
// profile's) and returns its rules, default ports applied.
func (c *checker) networkRules(path string, n wireNetwork) NetworkRules {
	var out NetworkRules
	for i, s := range entries(c, path+".services", n.Services) {
		at := fmt.Sprintf("%s.services[%d]", path, i)
		if _, ok := catalog.LookupService(s); !ok {
			c.failf(at, "%s", EnumError("service", s, catalog.ServiceNames()))
			continue
		}
		out.Services = append(out.Services, s)
	}
	out.Ports = DefaultPorts
	if n.Ports != nil {
		out.Ports = c.ports(path+".ports", n.Ports)
	}
	// The ports of allowed names: the catalog's 443, then the entries'.
	namePorts := map[uint16]bool{443: true}
	for i, d := range entries(c, path+".domains", n.Domains) {
		at := fmt.Sprintf("%s.domains[%d]", path, i)
		if d.Host == "" {
			c.failf(at, "missing host")
			continue
		}
		name, wild, err := validate.Domain(d.Host)
		if err != nil {
			c.fail(at, err)
			continue
		}
		out.Domains = append(out.Domains, DomainRule{Name: name, Wildcard: wild, Ports: c.ports(at+".ports", d.Ports)})
		c.namePorts(at, out, namePorts)
	}
	for i, r := range entries(c, path+".cidrs", n.CIDRs) {
		at := fmt.Sprintf("%s.cidrs[%d]", path, i)
		if r.CIDR == "" {
			c.failf(at, "missing cidr")
			continue
		}
		p, err := validate.CIDR(r.CIDR)
		if err != nil {
			c.fail(at, err)
			continue
		}
		out.CIDRs = append(out.CIDRs, CIDRRule{Prefix: p, Ports: c.ports(at+".ports", r.Ports)})
	}
	return out
}

// namePorts adds the ports of n's last domain entry, at path, to seen and
// fails when they pass what the gateway listens for: one listener below
// 1024 per port of allowed names (firewall.GatewayListenMax). Reported
// once, at the entry that passes it.
func (c *checker) namePorts(path string, n NetworkRules, seen map[uint16]bool) {
	before := len(seen)
	d := n.Domains[len(n.Domains)-1]
	ports := d.Ports
	if ports == nil {
		ports = n.Ports
	}
	for _, p := range ports {
		seen[p] = true
	}
	if len(seen) > firewall.GatewayListenMax && before <= firewall.GatewayListenMax {
		c.failf(path, "the domains' ports come to %d here; the gateway, which checks the name of every connection to an allowed name, listens on at most %d ports: list a service on more ports by address (network.cidrs)",
			len(seen), firewall.GatewayListenMax)
	}
}

func (c *checker) resources(w *wireFile, cfg *Config) {
	cfg.Memory, cfg.Pids = DefaultMemory, DefaultPids
	c.limits("resources", w.Resources, &cfg.CPUs, &cfg.Memory, &cfg.Pids)
}

// limits checks a resources section at path and overwrites the limits it
// writes.
func (c *checker) limits(path string, r wireResources, cpus *float64, memory *string, pids *int) {
	if r.CPUs != nil {
		if *r.CPUs <= 0 || *r.CPUs > 1024 {
			c.failf(path+".cpus", "invalid cpus %v: must be above 0 and at most 1024", *r.CPUs)
		}
		*cpus = *r.CPUs
	}
	if r.Memory != nil {
		m, err := validate.Memory(*r.Memory)
		if err != nil {
			c.fail(path+".memory", err)
		}
		*memory = m
	}
	if r.Pids != nil {
		if *r.Pids < 16 || *r.Pids > 4194304 {
			c.failf(path+".pids", "invalid pids %d: must be 16-4194304", *r.Pids)
		}
		*pids = *r.Pids
	}
}

// EnumError says that value is not one of valid, with a "did you mean".
func EnumError(what, value string, valid []string) string {
	msg := fmt.Sprintf("unknown %s %q; ", what, value)
	if s := yamlpos.Suggest(value, valid); s != "" {
		msg += fmt.Sprintf("did you mean %q? ", s)
	}
	return msg + "valid values are " + yamlpos.Quoted(valid)
}

// workspace checks workspace.writable and workspace.hidden.
func (c *checker) workspace(w wireWorkspace, cfg *Config) {
	for i, p := range entries(c, "workspace.writable", w.Writable) {
		if err := gitgate.CheckWritable(p); err != nil {
			c.fail(fmt.Sprintf("workspace.writable[%d]", i), err)
		}
	}
	cfg.Writable = sortedUnique(w.Writable)
	for _, p := range cfg.Writable {
		cfg.WritablePos = append(cfg.WritablePos, c.pos[fmt.Sprintf("workspace.writable[%d]", slices.Index(w.Writable, p))])
	}
	cfg.Hidden = DefaultHidden
	if w.Hidden != nil {
		cfg.Hidden = *w.Hidden
	}
	if w.Hidden == nil {
		return
	}
	for i, p := range entries(c, "workspace.hidden", cfg.Hidden) {
		if err := validate.PathPattern(strings.TrimPrefix(p, "!")); err != nil {
			c.fail(fmt.Sprintf("workspace.hidden[%d]", i), err)
		}
	}
}

// packages checks image.packages: each name, and that a package is listed
// with one version at most (apt would install either), and that the
// packages every image gets (BasePackages) are not pinned.
func (c *checker) packages(pkgs []string) {
	first := map[string]int{} // package name -> index of its first entry
	for i, p := range pkgs {
		path := fmt.Sprintf("image.packages[%d]", i)
		if err := validate.DebianPackage(p); err != nil {
			c.fail(path, err)
			continue
		}
		name, _, pinned := strings.Cut(p, "=")
		if j, seen := first[name]; seen {
			if pkgs[j] != p {
				at := c.pos[fmt.Sprintf("image.packages[%d]", j)]
				c.failf(path, "package %q is listed with two different versions (%q at %d:%d)", name, pkgs[j], at.Line, at.Col)
			}
			continue
		}
		first[name] = i
		if pinned && slices.Contains(BasePackages, name) {
			c.failf(path, "package %q is always installed, without a version; it cannot be pinned", name)
		}
	}
}

// within reports a list or mapping at path with more than MaxEntries
// entries, and says whether n is within the limit.
func (c *checker) within(path string, n int) bool {
	if n <= MaxEntries {
		return true
	}
	c.failf(path, "%d entries; at most %d are allowed", n, MaxEntries)
	return false
}

// entries returns list, or nothing when it has more than MaxEntries
// entries, which it reports: their own checks would only add noise.
func entries[T any](c *checker, path string, list []T) []T {
	if !c.within(path, len(list)) {
		return nil
	}
	return list
}

// env checks the variables of env: names, values, and the size of each
// NAME=VALUE string.
func (c *checker) env(env map[string]string, cfg *Config) {
	if !c.within("env", len(env)) {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		path, value := yamlpos.Join("env", name), env[name]
		if err := validate.EnvName(name); err != nil {
			c.fail(path, err)
		} else if err := validate.EnvValue(value); err != nil {
			c.fail(path, err)
		} else if n := len(name) + len("=") + len(value) + 1; n > MaxEnvString {
			c.failf(path, "%s=… with its terminating NUL is %d bytes; Linux takes at most %d (128 KiB) in one environment string", name, n, MaxEnvString)
		}
		cfg.Env = append(cfg.Env, catalog.EnvVar{Name: name, Value: value})
	}
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
