// Package bump is agentbox bump: it resolves every image reference of
// agentbox.yaml to its current digest, the agent CLI to its latest version
// and dependency tree, and the images' Debian packages to a dated snapshot,
// checks the CLI's engines.node against the image's Node, and renders the
// sandbox with the new agentbox.lock, which Write writes with the files in
// one transaction. Its collaborators (registry, npm, Debian's archive) are
// passed in; images/imagestest has map-backed fakes of them.
package bump
