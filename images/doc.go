// Package images owns everything agentbox knows about pinning container
// images and agent CLIs: parsing image references (tag and digest kept
// together), the agentbox.lock file that pins them, and the clients that
// resolve tags to digests and npm versions. The catalog of agents and
// services is package catalog.
package images
