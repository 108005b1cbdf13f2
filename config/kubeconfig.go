package config

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/internal/yamlpos"
	"github.com/distribution/reference"
)

// The kubernetes section: where the sandbox runs as a Pod and tasks as
// Jobs. With it, generate also writes the manifests under KubeDir.

// wireKubernetes is the kubernetes section as written.
type wireKubernetes struct {
	Namespace        *string `yaml:"namespace" jsonschema:"The namespace of the Pod and of the tasks' Jobs. Default: default."`
	Registry         *string `yaml:"registry" jsonschema:"Where agentbox build --push pushes the two images and the cluster's nodes pull them from: a repository prefix such as registry.example.com/team/agentbox (no tag, no digest)."`
	TTLAfterFinished *string `yaml:"ttl_after_finished" jsonschema:"How long a finished task's Job (and its Pod and logs) stays in the cluster: whole hours, minutes and seconds such as 1h. Default: 1h."`
}

// Kubernetes is the validated kubernetes section.
type Kubernetes struct {
	Namespace        string
	Registry         string // a repository prefix, lower case, no tag or digest
	TTLAfterFinished time.Duration
	Pos              yamlpos.Pos // where the section is written
}

// Defaults of the kubernetes section.
const (
	DefaultKubeNamespace = "default"
	DefaultKubeTTL       = time.Hour
)

// KubeNamespace is a DNS-1123 label: a namespace's name.
var KubeNamespace = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// kubernetes checks the kubernetes section; nil when it is not written.
func (c *checker) kubernetes(w wireKubernetes, cfg *Config) {
	pos, written := c.pos["kubernetes"]
	if !written {
		return
	}
	k := &Kubernetes{Namespace: DefaultKubeNamespace, TTLAfterFinished: DefaultKubeTTL, Pos: pos}
	if w.Namespace != nil {
		k.Namespace = *w.Namespace
		if !KubeNamespace.MatchString(k.Namespace) {
			c.failf("kubernetes.namespace", "invalid namespace %+q: want lower-case letters, digits and -, at most 63, starting and ending with a letter or digit", k.Namespace)
		}
	}
	if w.Registry == nil {
		c.failf("kubernetes", "kubernetes.registry is required: the repository prefix the images are pushed to and the nodes pull from")
	} else {
		k.Registry = *w.Registry
		if err := checkRegistry(k.Registry); err != nil {
			c.fail("kubernetes.registry", err)
		}
	}
	if w.TTLAfterFinished != nil {
		d, err := ParseTaskDuration(*w.TTLAfterFinished)
		if err != nil {
			c.fail("kubernetes.ttl_after_finished", err)
		}
		k.TTLAfterFinished = d
	}
	if prof, ok := cfg.Profile(cfg.DefaultProfile); ok && prof.Locked {
		c.failf("kubernetes", "the default profile %s has locked's filesystem, which the Pod does not provide yet; make a profile with its own filesystem the default", prof.Name)
	}
	if cfg.UID == CollectUID {
		c.failf("image.user.uid", "uid %d is reserved on Kubernetes for the container that collects a task's branch", cfg.UID)
	}
	cfg.Kubernetes = k
}

// CollectUID runs the collect container of a task's Kubernetes Job:
// neither the agent's uid nor the resolver's.
const CollectUID = 65532

// checkRegistry accepts a repository prefix that, with "/NAME-agent:TAG"
// appended, is a valid image reference naming a registry host.
func checkRegistry(r string) error {
	if r == "" || strings.HasSuffix(r, "/") || strings.ContainsAny(r, "@ \t\n") {
		return fmt.Errorf("invalid registry %+q: want a repository prefix such as registry.example.com/team", r)
	}
	named, err := reference.ParseNamed(r + "/x-agent:t")
	if err != nil {
		return fmt.Errorf("invalid registry %+q: %v (want lower case, such as registry.example.com/team)", r, err)
	}
	if host := reference.Domain(named); !strings.ContainsAny(host, ".:") && host != "localhost" {
		return fmt.Errorf("invalid registry %+q: name the registry's host first, such as registry.example.com/%s", r, r)
	}
	return nil
}
