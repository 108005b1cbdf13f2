// Package lockfile owns agentbox.lock: its type (every image reference to
// a digest, the agent CLI's whole npm tree, the Debian packages of both
// images at a dated snapshot), reading and validating it with file:line:col
// errors, and writing it in its one canonical form. Resolving what goes in
// it is images', internal/npm's and internal/debian's.
package lockfile
