//go:build tools

// Package tools pins modules that agentbox's packages are about to use, so
// that go.mod stays tidy while they are being written.
package tools

import (
	_ "github.com/compose-spec/compose-go/v2/loader"
	_ "github.com/google/go-containerregistry/pkg/name"
	_ "github.com/moby/buildkit/frontend/dockerfile/parser"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/sirupsen/logrus"
	_ "github.com/spf13/cobra"
	_ "github.com/tailscale/hujson"
	_ "go.yaml.in/yaml/v3"
	_ "mvdan.cc/sh/v3/syntax"
)
