// Package checks owns the validation of rendered outputs before anything is
// written: each function parses one kind of generated file with that
// ecosystem's own parser (compose-go, buildkit's Dockerfile parser,
// mvdan.cc/sh, hujson) and applies the few extra rules agentbox relies on.
//
// A failed check means agentbox rendered something wrong: the error names the
// file kind and, where the parser reports one, the line. The functions never
// print; compose-go's logrus warnings are discarded (see Compose).
package checks
