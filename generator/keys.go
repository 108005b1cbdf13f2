package generator

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	corev1 "k8s.io/api/core/v1"
)

// HeldKey is a model credential that a profile's gateway holds instead of
// the agent (docs/gateway.md, "Keys outside the sandbox"): the agent's
// environment has catalog.KeyPlaceholder in Key.Name and BaseURL in
// BaseVar; agentbox up and run hand the credential to egress.
type HeldKey struct {
	firewall.Key
	BaseVar  string // the variable of the base URL
	BaseURL  string // the agent's: the key's listener on loopback, then the provider's path
	Upstream string // the provider's base URL
}

// HeldKeys returns the model credentials that a profile with policy pol
// holds at its gateway: each name of secrets and run.env that
// catalog.ModelKeys knows, when the profile has a gateway and the
// credential has a provider (its base URL variable in env:, else the
// catalog's default). The keys of one base URL (claude's API key and its
// subscription token) share its listener, in the catalog's order. A
// provider the gateway cannot serve is an error (KeyErrors, by name): the
// key does not go back to the agent.
func HeldKeys(cfg *config.Config, pol firewall.Policy) ([]HeldKey, KeyErrors) {
	if !pol.HasGateway() {
		return nil, nil
	}
	env := map[string]string{}
	for _, e := range cfg.Env {
		env[e.Name] = e.Value
	}
	var out []HeldKey
	errs := KeyErrors{}
	names := cfg.TaskEnv()
	// In the catalog's order: of the keys of one base URL, the first that
	// agentbox hands over goes upstream (firewall.Key.Base).
	for _, mk := range catalog.ModelKeys() {
		name := mk.Name
		if !slices.Contains(names, name) {
			continue
		}
		upstream := cmp.Or(env[mk.BaseVar], mk.Default)
		if upstream == "" {
			continue // the CLI sends it nowhere without a base URL of the user's
		}
		k, err := heldKey(mk, upstream, env)
		if err == nil {
			err = firewall.CheckKey(k.Key, pol)
		}
		if err != nil {
			errs[name] = fmt.Errorf("the gateway holds %s for the agent: %w", name, err)
			continue
		}
		out = append(out, k)
	}
	listen := firewall.KeyListeners(keysOf(out))
	for i := range out {
		out[i].BaseURL = firewall.KeyURL(listen[out[i].Name], out[i].BaseURL)
	}
	if len(errs) == 0 {
		errs = nil
	}
	return out, errs
}

// KeyErrors are the errors of HeldKeys by the credential's name.
type KeyErrors map[string]error

// heldKey makes the key of mk for upstream; BaseURL holds the provider's
// path until HeldKeys knows the listener.
func heldKey(mk catalog.ModelKey, upstream string, env map[string]string) (HeldKey, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return HeldKey{}, fmt.Errorf("%s %q: want scheme://host[:port][/path][?query]", mk.BaseVar, upstream)
	}
	// The path and the query stay the agent's: the gateway passes each
	// request's target through as the CLI builds it from its base URL.
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	k := HeldKey{Key: firewall.Key{Name: mk.Name, Header: mk.Header, Bearer: mk.Bearer, Host: strings.ToLower(u.Hostname()), Base: mk.BaseVar},
		BaseVar: mk.BaseVar, Upstream: upstream, BaseURL: path}
	if h, ok := mk.TypeHeaders[env[mk.TypeVar]]; ok {
		k.Header, k.Bearer = h.Header, h.Bearer
	}
	_, notAddr := netip.ParseAddr(k.Host)
	port := 443
	switch {
	case u.Scheme == "https" && notAddr == nil:
		return HeldKey{}, fmt.Errorf("%s %q: name the provider's host, whose certificate the gateway verifies, not an address", mk.BaseVar, upstream)
	case u.Scheme == "http" && notAddr != nil:
		return HeldKey{}, fmt.Errorf("%s %q: plain HTTP only to a private address listed in network.cidrs, else https", mk.BaseVar, upstream)
	case u.Scheme == "http":
		port = 80
	case u.Scheme != "https":
		return HeldKey{}, fmt.Errorf("%s %q: want https (or http to a private address)", mk.BaseVar, upstream)
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return HeldKey{}, fmt.Errorf("%s %q: bad port", mk.BaseVar, upstream)
		}
	}
	k.Port = uint16(port)
	return k, nil
}

func keysOf(held []HeldKey) []firewall.Key {
	out := make([]firewall.Key, len(held))
	for i, h := range held {
		out[i] = h.Key
	}
	return out
}

// GatewayReadyEnv, in the agent's environment when the gateway holds
// keys, is the port of a key's listener: a task's agent waits until it
// answers firewall.KeysReadyPath with 200, that is until agentbox run has
// handed the keys to egress.
const GatewayReadyEnv = "AGENTBOX_GATEWAY_READY"

// sandboxKeys are the held keys that secrets lists: the sandbox's (up
// hands them over); run.env's are the tasks' alone.
func sandboxKeys(held []HeldKey, secrets []string) []HeldKey {
	var out []HeldKey
	for _, k := range held {
		if slices.Contains(secrets, k.Name) {
			out = append(out, k)
		}
	}
	return out
}

// taskKeyEnv sets, in a task's agent environment env (its compose
// override), the placeholders and base URLs of every held key, and the
// port its agent waits on until run has handed them over.
func taskKeyEnv(env map[string]any, held []HeldKey) {
	for _, k := range held {
		env[k.Name] = catalog.KeyPlaceholder
		env[k.BaseVar] = k.BaseURL
	}
	if len(held) > 0 {
		env[GatewayReadyEnv] = strconv.Itoa(firewall.GatewayKeyListenBase)
	}
}

// withHeldKeys returns the agent's environment and secrets with the held
// keys' placeholders and base URLs in place of the credentials.
func withHeldKeys(env []catalog.EnvVar, secrets []string, held []HeldKey) ([]catalog.EnvVar, []string) {
	var set []catalog.EnvVar
	for _, k := range held {
		set = append(set, catalog.EnvVar{Name: k.Name, Value: catalog.KeyPlaceholder}, catalog.EnvVar{Name: k.BaseVar, Value: k.BaseURL})
		secrets = slices.DeleteFunc(slices.Clone(secrets), func(n string) bool { return n == k.Name })
	}
	if len(held) > 0 {
		set = append(set, catalog.EnvVar{Name: GatewayReadyEnv, Value: strconv.Itoa(firewall.GatewayKeyListenBase)})
	}
	return mergeEnv(env, set), secrets
}

// planKeys returns the keys profile pp's gateway holds and puts them into
// its policy; their errors go to errs at the credential's name in secrets
// or run.env.
func planKeys(cfg *config.Config, pp *ProfilePlan, errs *yamlpos.Errors) []HeldKey {
	held, kerrs := HeldKeys(cfg, pp.Policy)
	for _, name := range slices.Sorted(maps.Keys(kerrs)) {
		pos, path := keyPos(cfg, name)
		errs.Add(pos, path, "profile %s: %v", pp.Name, kerrs[name])
	}
	pp.Policy.Keys = keysOf(held)
	return held
}

// keyPos is where name is written: in secrets, else in run.env.
func keyPos(cfg *config.Config, name string) (yamlpos.Pos, string) {
	if i := slices.Index(cfg.Secrets, name); i >= 0 && i < len(cfg.SecretsPos) {
		return cfg.SecretsPos[i], fmt.Sprintf("secrets[%d]", i)
	}
	if i := slices.Index(cfg.RunEnv, name); i >= 0 && i < len(cfg.RunEnvPos) {
		return cfg.RunEnvPos[i], fmt.Sprintf("run.env[%d]", i)
	}
	return yamlpos.Pos{}, "secrets"
}

// HeldKeyNames returns the names of the model keys and forge tokens that
// the gateway of cfg's profile holds: what agentbox up and run hand to its
// egress.
func HeldKeyNames(cfg *config.Config, profile string) []string {
	prof, ok := cfg.Profile(cmp.Or(profile, cfg.DefaultProfile))
	if !ok {
		return nil
	}
	pol := profilePolicy(cfg, prof)
	held, _ := HeldKeys(cfg, pol)
	var out []string
	for _, k := range held {
		out = append(out, k.Name)
	}
	// And the forges' tokens (forges.go).
	out = append(out, forgeTokens(ProfileForges(cfg, pol))...)
	slices.Sort(out)
	return slices.Compact(out)
}

// defaultPolicy is the default profile's policy: a task on Kubernetes
// runs its firewall.
func defaultPolicy(cfg *config.Config) firewall.Policy {
	prof, ok := cfg.Profile(cfg.DefaultProfile)
	if !ok {
		return firewall.Policy{}
	}
	return profilePolicy(cfg, prof)
}

// KubeKeyNames returns the names of the model keys that a task on
// Kubernetes hands to its gateway: the Secret KubeTask.Keys holds them,
// the Secret of run.env the others.
func KubeKeyNames(cfg *config.Config) []string {
	return HeldKeyNames(cfg, cfg.DefaultProfile)
}

// kubeKeysVolume is the Pod's volume of the keys' Secret.
const kubeKeysVolume = "gateway-keys"

// kubeKeys mounts the Secret of the held keys in egress alone, root's and
// read-only (the entrypoint hands them to HAProxy before it is ready),
// and gives the agent the placeholders and the gateway's base URLs.
func kubeKeys(spec *corev1.PodSpec, held []HeldKey, secret string) {
	mode := int32(0o400)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: kubeKeysVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret, DefaultMode: &mode}}})
	for i := range spec.InitContainers {
		if c := &spec.InitContainers[i]; c.Name == "egress" {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: kubeKeysVolume, MountPath: firewall.GatewayKeysDir, ReadOnly: true})
		}
	}
	for i := range spec.Containers {
		if c := &spec.Containers[i]; c.Name == "agent" {
			for _, k := range held {
				setEnv(c, k.Name, catalog.KeyPlaceholder)
				setEnv(c, k.BaseVar, k.BaseURL)
			}
		}
	}
}

// setEnv sets name to value in c's environment, in place of its value
// there.
func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}
