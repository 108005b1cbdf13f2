// Package review holds the reviewers' views of a compiled sandbox: explain
// (the effective sandbox in plain terms, each fact with the key and line of
// agentbox.yaml it comes from) and diff (what a change to agentbox.yaml or
// agentbox.lock widens, narrows or changes). It reads the generator's plan
// and never prints; cmd/agentbox lays its views out through templates.
package review
