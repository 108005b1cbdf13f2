package review

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
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

// TestKeysDescribed: every key of the schema is in Keys, either as a part
// of the Sandbox that explain prints (and the path exists in its JSON) or
// with the reason it changes nothing the agent can do; and Keys names no
// key the schema lacks.
func TestKeysDescribed(t *testing.T) {
	schema := schemaKeys(t)
	for _, k := range schema {
		role, ok := Keys[k]
		switch {
		case !ok:
			t.Errorf("key %s: neither part of the Sandbox nor declared as granting nothing (add it to review.Keys)", k)
		case (role.Part == "") == (role.Reason == ""):
			t.Errorf("key %s: want a part or a reason, exactly one: %+v", k, role)
		case role.Part != "" && !jsonPathExists(reflect.TypeFor[Sandbox](), role.Part):
			t.Errorf("key %s: part %q is no path of explain's JSON", k, role.Part)
		}
	}
	for k := range Keys {
		if !slices.Contains(schema, k) {
			t.Errorf("review.Keys names %s, which is no key of the schema", k)
		}
	}
}

// jsonPathExists reports whether path ("a.b", "a[].b") names a field of t
// by its JSON names, embedded structs' fields included.
func jsonPathExists(t reflect.Type, path string) bool {
	for _, seg := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(seg, "[]")
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		f, ok := jsonField(t, name)
		if !ok {
			return false
		}
		t = f.Type
		if list {
			if t.Kind() != reflect.Slice {
				return false
			}
			t = t.Elem()
		}
	}
	return true
}

func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			if g, ok := jsonField(f.Type, name); ok {
				return g, true
			}
			continue
		}
		if f.IsExported() && tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
