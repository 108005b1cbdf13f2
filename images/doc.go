// Package images owns image references and their resolution: parsing
// references (tag and digest kept together), the registry client that
// resolves tags to digests, and reading an image's os-release. The lock file
// that pins them (agentbox.lock) is package lockfile; the npm registry client
// is package internal/npm; the catalog of agents and services is package
// catalog.
package images
