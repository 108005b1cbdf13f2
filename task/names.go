package task

import (
	"slices"

	"github.com/agentbox-dev/agentbox/generator"
)

// Names are the names of the sandbox's recorded tasks (running: only those
// whose record says running), sorted; a record whose name is not a task's
// name is left out. Nil when the records cannot be read: shell completion
// offers them, and it never fails.
func Names(project string, running bool) []string {
	recs, err := List(project)
	if err != nil {
		return nil
	}
	var names []string
	for _, r := range recs {
		if generator.TaskName.MatchString(r.Name) && (!running || r.State == StateRunning) {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return names
}
