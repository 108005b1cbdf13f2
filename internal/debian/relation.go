package debian

import (
	"fmt"
	"strings"
)

// relations returns the package names a Depends, Pre-Depends or Provides
// field mentions: every alternative of "a | b", without version
// constraints, architecture qualifiers (":any") or restrictions ("[...]").
func relations(field string) ([]string, error) {
	var names []string
	for _, group := range strings.Split(field, ",") {
		for _, alt := range strings.Split(group, "|") {
			alt = strings.TrimSpace(alt)
			if alt == "" {
				continue
			}
			name := alt
			if i := strings.IndexAny(name, " \t([<"); i >= 0 {
				name = name[:i]
			}
			name, _, _ = strings.Cut(name, ":")
			if !ValidPackageName(name) {
				return nil, fmt.Errorf("invalid package name in relation %q", alt)
			}
			names = append(names, name)
		}
	}
	return names, nil
}
