package review

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/agentbox-dev/agentbox/config"
)

// schemaKeys are the keys of agentbox.yaml, walked from its JSON Schema:
// every key whose value is a scalar, a list of scalars or a map of
// scalars ("[]" an item of a list, "*" any key of a map of sections).
func schemaKeys(t *testing.T) []string {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(config.JSONSchema(), &root); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(path string, n map[string]any)
	walk = func(path string, n map[string]any) {
		if alts, ok := n["oneOf"].([]any); ok { // a string or a mapping: the mapping's keys
			for _, a := range alts {
				if m := a.(map[string]any); m["properties"] != nil {
					walk(path, m)
				}
			}
			return
		}
		if props, ok := n["properties"].(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(props)) {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, props[k].(map[string]any))
			}
			return
		}
		if items, ok := n["items"].(map[string]any); ok && (items["properties"] != nil || items["oneOf"] != nil) {
			walk(path+"[]", items)
			return
		}
		if add, ok := n["additionalProperties"].(map[string]any); ok && add["properties"] != nil {
			walk(path+".*", add)
			return
		}
		keys = append(keys, path)
	}
	walk("", root)
	return keys
}
