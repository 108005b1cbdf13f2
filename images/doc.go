// Package images owns everything agentbox knows about container images and
// agent CLIs: parsing image references (tag and digest kept together), the
// agentbox.lock file that pins them, and the catalog of agents and services
// with their packages, base images and egress domains.
package images
