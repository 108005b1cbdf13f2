package generator

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	corev1 "k8s.io/api/core/v1"
)

// ProfileForges returns the git forges whose HTTPS git goes through the
// front door of a profile with policy pol (docs/gateway.md, "Pushes
// scoped"): each of git.forges that pol allows on port 443, and
// config.DefaultForge when pol allows it and git.forges does not list it
// (no token, no push, and direct TLS to it left as the policy allows it:
// agents' logins use it, Copilot's among them). None without the gateway.
func ProfileForges(cfg *config.Config, pol firewall.Policy) []firewall.Forge {
	if !pol.HasGateway() {
		return nil
	}
	var out []firewall.Forge
	for _, f := range cfg.GitForges {
		if allows(pol, f.Host, config.HTTPSPort) {
			fw := firewall.Forge{Host: f.Host, Token: f.Token, TokenRepos: slices.Clone(f.Repos)}
			for _, p := range f.Push {
				fw.Push = append(fw.Push, firewall.ForgePush{Repo: p.Repo, Branches: slices.Clone(p.Branches)})
			}
			out = append(out, fw)
		}
	}
	listed := slices.ContainsFunc(cfg.GitForges, func(f config.GitForge) bool { return f.Host == config.DefaultForge })
	if !listed && allows(pol, config.DefaultForge, config.HTTPSPort) {
		out = append(out, firewall.Forge{Host: config.DefaultForge, Direct: true})
	}
	slices.SortFunc(out, func(a, b firewall.Forge) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

// allows says whether pol allows name (or a name above it) on port.
func allows(pol firewall.Policy, name string, port uint16) bool {
	for _, d := range pol.Domains {
		if (name == d.Name || len(name) > len(d.Name) && name[len(name)-len(d.Name)-1:] == "."+d.Name) && slices.Contains(d.Ports, port) {
			return true
		}
	}
	return false
}

// planForges puts profile pp's forges into its policy. A forge of
// git.forges that the default profile's gateway does not allow is an error
// at its host: its token and pushes would go nowhere.
func planForges(cfg *config.Config, pp *ProfilePlan, errs *yamlpos.Errors) {
	pp.Policy.Forges = ProfileForges(cfg, pp.Policy)
	if pp.Name != cfg.DefaultProfile || !pp.Policy.HasGateway() {
		return
	}
	for i, f := range cfg.GitForges {
		if !slices.ContainsFunc(pp.Policy.Forges, func(g firewall.Forge) bool { return g.Host == f.Host }) {
			errs.Add(f.HostPos, "git.forges["+strconv.Itoa(i)+"].host", "profile %s does not allow %s on port 443: add it to network.domains (or the github service)", pp.Name, f.Host)
		}
	}
}

// forgeTokens are the forges' tokens, which the gateway holds.
func forgeTokens(forges []firewall.Forge) []string {
	var out []string
	for _, f := range forges {
		if f.Token != "" {
			out = append(out, f.Token)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// forgeEnv is the agent's environment for the forges' front doors: git's
// configuration from the environment (GIT_CONFIG_COUNT, git 2.31 and
// later), url.<front door>.insteadOf each forge's URL, one profile's
// (the image serves every profile, and a profile without the gateway has
// no front door); the tokens' placeholders; and, when the gateway holds
// tokens and no key, the port a task's agent waits on until run has handed
// them over.
func forgeEnv(forges []firewall.Forge, keys bool) []catalog.EnvVar {
	if len(forges) == 0 {
		return nil
	}
	listen := firewall.ForgeListeners(forges)
	pairs := ForgeGitConfig(forges)
	out := []catalog.EnvVar{{Name: "GIT_CONFIG_COUNT", Value: strconv.Itoa(len(pairs))}}
	for i, kv := range pairs {
		n := strconv.Itoa(i)
		out = append(out, catalog.EnvVar{Name: "GIT_CONFIG_KEY_" + n, Value: kv[0]}, catalog.EnvVar{Name: "GIT_CONFIG_VALUE_" + n, Value: kv[1]})
	}
	tokens := forgeTokens(forges)
	for _, t := range tokens {
		out = append(out, catalog.EnvVar{Name: t, Value: catalog.KeyPlaceholder})
	}
	if len(tokens) > 0 && !keys {
		for _, f := range forges {
			if f.Token != "" {
				out = append(out, catalog.EnvVar{Name: GatewayReadyEnv, Value: strconv.Itoa(listen[f.Host])})
				break
			}
		}
	}
	return out
}

// ForgeGitConfig is the agent's git configuration for the forges' front
// doors, as key and value: each forge's URL goes to its front door
// (url.<front door>.insteadOf), and never through a proxy that the
// environment names (http.<front door>.proxy empty: the front door is on
// the agent's own loopback).
func ForgeGitConfig(forges []firewall.Forge) [][2]string {
	listen := firewall.ForgeListeners(forges)
	var out [][2]string
	for _, f := range forges {
		door := firewall.ForgeURL(listen[f.Host])
		out = append(out, [2]string{"url." + door + ".insteadOf", f.URL()}, [2]string{"http." + door + ".proxy", ""})
	}
	return out
}

// withForges returns the agent's environment and secrets with the forges'
// front doors configured and their tokens' placeholders in place of the
// tokens.
func withForges(env []catalog.EnvVar, secrets []string, forges []firewall.Forge, keys bool) ([]catalog.EnvVar, []string) {
	tokens := forgeTokens(forges)
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(n string) bool { return slices.Contains(tokens, n) })
	return mergeEnv(env, forgeEnv(forges, keys)), secrets
}

// taskForgeEnv sets forgeEnv in a task's agent environment env (its
// compose override).
func taskForgeEnv(env map[string]any, forges []firewall.Forge, keys bool) {
	for _, e := range forgeEnv(forges, keys) {
		env[e.Name] = e.Value
	}
}

// kubeForges sets forgeEnv in the environment of a task's agent on
// Kubernetes.
func kubeForges(spec *corev1.PodSpec, forges []firewall.Forge, keys bool) {
	for i := range spec.Containers {
		if c := &spec.Containers[i]; c.Name == "agent" {
			for _, e := range forgeEnv(forges, keys) {
				setEnv(c, e.Name, e.Value)
			}
		}
	}
}
