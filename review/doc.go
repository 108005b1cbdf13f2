// Package review holds the reviewers' views of a compiled sandbox: explain
// (the effective sandbox in plain terms, each fact with the key and line of
// agentbox.yaml it comes from) and diff (what a change to agentbox.yaml or
// agentbox.lock widens, narrows or changes, against a git revision). It
// reads the generator's plan and never prints: it renders its views as
// text for a terminal and as Markdown for a pull request (templates/, every
// foreign value escaped), which cmd/agentbox prints and the generated
// workflow posts.
package review
