// Package images owns everything agentbox knows about pinning container
// images: parsing image references (tag and digest kept together), the
// agentbox.lock file that pins them with the agent CLI's npm tree and the
// Debian packages, and the registry client that resolves tags to digests.
// The npm registry client is package internal/npm; the catalog of agents
// and services is package catalog.
package images
