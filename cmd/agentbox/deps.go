package main

import (
	"os"

	"github.com/agentbox-dev/agentbox/images"
)

// deps are the collaborators the commands reach the world through: the
// registries bump asks, and the sandbox fetch takes the agent's branches
// from. main gives the real ones (realDeps); tests give their own, so that
// tests never share a package variable and can run in parallel.
type deps struct {
	// resolver returns the image resolver of a bump.
	resolver func() images.Resolver
	// npm returns the npm registry client of a bump of the project in dir.
	npm func(dir string) images.NPM
	// bundle writes a git bundle of the agent's branches (fetch).
	bundle bundleSource
}

// realDeps are the collaborators of the installed agentbox: the registries
// named by the Docker and npm configurations, and the running sandbox.
func realDeps() deps {
	return deps{
		resolver: func() images.Resolver { return images.NewRegistryResolver(images.RegistryOptions{}) },
		npm: func(dir string) images.NPM {
			return images.NewNPMClient(images.NPMOptions{Registry: images.NPMRegistryFromConfig(dir, os.Getenv)})
		},
		bundle: composeBundle,
	}
}
