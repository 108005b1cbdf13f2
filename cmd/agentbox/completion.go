package main

// Shell completion of the names only the project knows: its profiles (from
// agentbox.yaml) and its tasks (from agentbox's task records). Completion
// never fails: without a readable agentbox.yaml it offers nothing.

import (
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/task"
	"github.com/spf13/cobra"
)

// projectConfig is agentbox.yaml in dir, loaded; nil when it cannot be
// read.
func projectConfig(dir string) *config.Config {
	c, err := generator.Compile(dir, generator.CompileOptions{Until: generator.Loaded})
	if err != nil {
		return nil
	}
	return c.Config
}

// profileNames are the profiles of agentbox.yaml in dir, sorted.
func profileNames(dir string) []string {
	cfg := projectConfig(dir)
	if cfg == nil {
		return nil
	}
	names := cfg.ProfileNames()
	slices.Sort(names)
	return names
}

// taskNames are the names of the recorded tasks of the sandbox in dir
// (running: those whose record says running), sorted (task.Names).
func taskNames(dir string, running bool) []string {
	cfg := projectConfig(dir)
	if cfg == nil {
		return nil
	}
	return task.Names(cfg.Name, running)
}

// withPrefix are the values that start with prefix.
func withPrefix(values []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// completeProfiles completes a flag that takes a profile of the project in
// *dir.
func completeProfiles(dir *string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(profileNames(*dir), prefix), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTask completes a flag or the one argument that takes a task of
// the sandbox in *dir (running: only the running ones).
func completeTask(dir *string, running bool) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return withPrefix(taskNames(*dir, running), prefix), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTaskArg completes a command's one TASK argument.
func completeTaskArg(dir *string, running bool) cobra.CompletionFunc {
	tasks := completeTask(dir, running)
	return func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return tasks(c, args, prefix)
	}
}
