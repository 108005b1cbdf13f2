// Package templates holds the embedded text templates that agentbox renders:
// the two Dockerfiles, the compose file, the Dev Container definition and the
// commented agentbox.yaml that `agentbox init` writes, and, under ci/, the
// CI workflow that `agentbox ci github` writes. Templates see only validated
// data and hermetic functions (no environment, clock or files).
package templates

import "embed"

// FS holds every template, named after the file it renders plus ".tmpl".
// The templates under ci/ use the delimiters [[ ]], so that GitHub's own
// ${{ }} expressions read as they are.
//
//go:embed *.tmpl ci/*.tmpl
var FS embed.FS
