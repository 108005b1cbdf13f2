package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// SchemaID is the $id of the JSON Schema of agentbox.yaml.
const SchemaID = "https://agentbox.dev/schema/agentbox.schema.json"

// JSONSchema returns the JSON Schema (draft 2020-12) of agentbox.yaml,
// reflected from the wire structs: indented by two spaces, keys sorted,
// ending in a newline. The schema is a help for editors and the loader stays
// the authority: every constraint in it is one the loader enforces too, so
// the schema accepts every file the loader accepts, and some it rejects.
func JSONSchema() []byte {
	extra := schemaConstraints()
	maps.Copy(extra, forgeConstraints())
	r := &reflector{extra: extra, used: map[string]bool{}}
	root := r.object(reflect.TypeFor[wireFile](), "")
	for _, path := range slices.Sorted(maps.Keys(r.extra)) {
		if !r.used[path] {
			panic(fmt.Sprintf("generator: schema constraint for %q, which is no key of %s", path, ConfigFile))
		}
	}
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = ConfigFile
	root["description"] = "The sandbox of a project, compiled by `agentbox generate`. " +
		"`agentbox validate` is the authority: it also checks what a schema cannot express."
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		panic(fmt.Sprintf("generator: encoding the schema: %v", err))
	}
	return asciiJSON(buf.Bytes())
}

// schemaNode is one JSON Schema object.
type schemaNode = map[string]any

// schemaConstraints are the static facts the loader checks, keyed by path
// ("[]" stands for an item of a list). Each accepts every value the loader
// accepts; where the loader's check is more than a simple pattern, the
// constraint is looser (memory sizes, paths) or absent (domains, CIDRs,
// image references).
func schemaConstraints() map[string]schemaNode {
	ports := schemaNode{"minItems": 1} // an empty list would allow nothing
	port := schemaNode{"minimum": 1, "maximum": 65535, "not": schemaNode{"const": dnsPort}}
	id := schemaNode{"minimum": 1, "maximum": 65534}
	segment, globSegment := validate.PathSegmentGrammar, validate.GlobSegmentGrammar
	taskDuration := schemaNode{"pattern": "^" + TaskDurationGrammar + "$", "minLength": 1}
	m := map[string]schemaNode{
		"version":          {"enum": []any{1}},
		"name":             {"pattern": "^" + validate.ProjectNameGrammar + "$", "maxLength": 63, "not": schemaNode{"pattern": validate.TaskSeparatorGrammar}},
		"agent":            {"enum": anys(catalog.AgentNames())},
		"image.packages[]": {"pattern": "^" + validate.DebianPackageGrammar + "(=" + validate.DebianVersionGrammar + ")?$", "maxLength": 200},
		"image.user.uid":   merged(id, schemaNode{"not": schemaNode{"enum": []int{firewall.DNSUID, firewall.GatewayUID, firewall.RequestUID}}}),
		"image.user.gid":   id,

		"network.services[]":        {"enum": anys(catalog.ServiceNames())},
		"network.domains[].host":    {"minLength": 1},
		"network.domains[].ports":   ports,
		"network.domains[].ports[]": port,
		"network.cidrs[].cidr":      {"minLength": 1},
		"network.cidrs[].ports":     ports,
		"network.cidrs[].ports[]":   port,
		"network.ports":             ports,
		"network.ports[]":           port,

		"resources.cpus":   {"exclusiveMinimum": 0, "maximum": 1024},
		"resources.memory": {"pattern": "^[0-9]+[kmgKMG][bB]?$"},
		"resources.pids":   {"minimum": 16, "maximum": 4194304},

		"env":       {"propertyNames": schemaNode{"pattern": "^" + validate.EnvNameGrammar + "$"}},
		"secrets[]": {"pattern": "^" + validate.EnvNameGrammar + "$", "not": schemaNode{"pattern": "^" + ReservedEnvPrefix}},

		"workspace.path":       {"pattern": `^(/` + segment + `)+$`},
		"workspace.readonly[]": {"pattern": `^` + segment + `(/` + segment + `)*$`},
		"workspace.writable[]": {"pattern": `^` + segment + `(/` + segment + `)*$`},
		"workspace.hidden[]":   {"pattern": `^!?` + globSegment + `(/` + globSegment + `)*$`},

		"devcontainer.ide":          {"enum": anys(IDEs)},
		"devcontainer.extensions[]": {"pattern": "^" + validate.ExtensionGrammar + "$", "maxLength": 200},

		"run.timeout":               taskDuration,
		"run.max_timeout":           taskDuration,
		"run.env[]":                 {"pattern": "^" + validate.EnvNameGrammar + "$", "not": schemaNode{"pattern": "^" + ReservedEnvPrefix}},
		"elevation.max_duration":    taskDuration,
		"elevation.request_timeout": taskDuration,
	}
	profiles := schemaNode{"propertyNames": schemaNode{"pattern": "^" + ProfileGrammar + "$", "not": schemaNode{"enum": anys(BuiltinProfiles)}}}
	m["profiles"] = profiles
	m["profiles.*.from"] = schemaNode{"enum": anys(BuiltinProfiles)}
	m["profile"] = schemaNode{"pattern": "^" + ProfileGrammar + "$"}
	m["profiles.*.workspace.readonly[]"] = m["workspace.readonly[]"]
	m["profiles.*.workspace.hidden[]"] = m["workspace.hidden[]"]
	for _, key := range slices.Sorted(maps.Keys(m)) {
		for _, section := range []string{"network.", "resources.", "elevation."} {
			if strings.HasPrefix(key, section) {
				m["profiles.*."+key] = m[key]
			}
		}
	}
	return m
}

// forgeConstraints are git.forges': what the gateway's front door reads
// (config/gitforges.go).
func forgeConstraints() map[string]schemaNode {
	repo := schemaNode{"pattern": `^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$`}
	return map[string]schemaNode{
		"git.forges[].token":             {"pattern": "^" + validate.EnvNameGrammar + "$"},
		"git.forges[].repos[]":           repo,
		"git.forges[].push[].repo":       repo,
		"git.forges[].push[].branches":   {"minItems": 1},
		"git.forges[].push[].branches[]": {"pattern": `^[^/:~^?\[\\ .-][^:~^?\[\\ ]*$`, "maxLength": 200},
	}
}

// reflector builds the schema of a wire struct the way yamlpos decodes it.
type reflector struct {
	extra map[string]schemaNode
	used  map[string]bool
}

var unmarshalerType = reflect.TypeFor[yamlpos.Unmarshaler]()

// schema returns the schema of a value of type t at path. A null stands for
// "not set" wherever yamlpos takes it so: sections (structs), lists and
// maps; a scalar needs a value.
func (r *reflector) schema(t reflect.Type, path string) schemaNode {
	pointer, nullable := t.Kind() == reflect.Pointer, false
	if pointer {
		t = t.Elem()
	}
	var s schemaNode
	switch {
	case reflect.PointerTo(t).Implements(unmarshalerType):
		if pointer {
			panic(fmt.Sprintf("generator: schema of %s: a pointer to a union type", path))
		}
		s = r.union(t, path)
	case t.Kind() == reflect.Struct:
		s, nullable = r.object(t, path), true
	case t.Kind() == reflect.Slice:
		s = schemaNode{"type": "array", "items": r.schema(t.Elem(), path+"[]"), "maxItems": MaxEntries}
		nullable = true
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Struct:
		// A map of sections (profiles): "*" stands for any key in path.
		s = schemaNode{"type": "object", "additionalProperties": r.object(t.Elem(), path+".*"), "maxProperties": MaxEntries}
		nullable = true
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String:
		// yamlpos takes any scalar but null as a map value, as written.
		s = schemaNode{"type": "object", "additionalProperties": schemaNode{"type": []any{"string", "number", "boolean"}}, "maxProperties": MaxEntries}
		nullable = true
	case t.Kind() == reflect.String:
		s = schemaNode{"type": "string"}
	case t.Kind() == reflect.Int:
		s = schemaNode{"type": "integer"}
	case t.Kind() == reflect.Float64:
		s = schemaNode{"type": "number"}
	case t.Kind() == reflect.Bool:
		s = schemaNode{"type": "boolean"}
	default:
		panic(fmt.Sprintf("generator: schema of %s: unsupported type %s", path, t))
	}
	if extra, ok := r.extra[path]; ok {
		maps.Copy(s, extra)
		r.used[path] = true
	}
	if nullable {
		s["type"] = []any{s["type"], "null"}
		if enum, ok := s["enum"].([]any); ok {
			s["enum"] = append(slices.Clip(enum), nil)
		}
	}
	return s
}

// object returns the schema of struct t: its yaml keys and nothing else.
func (r *reflector) object(t reflect.Type, path string) schemaNode {
	props := schemaNode{}
	var required []string
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("yaml")
		if key == "" || key == "-" {
			continue // yamlpos skips the field too
		}
		s := r.schema(f.Type, keyPath(path, key))
		desc, req := parseSchemaTag(f.Tag.Get("jsonschema"))
		if desc != "" {
			s["description"] = desc
		}
		if req {
			required = append(required, key)
		}
		props[key] = s
	}
	s := schemaNode{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		s["required"] = required
	}
	return s
}

// union returns the schema of a type that decodes itself from a string or a
// mapping, such as wireDomain: the string stands for the mapping's one
// required key.
func (r *reflector) union(t reflect.Type, path string) schemaNode {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("generator: schema of %s: union type %s is not a struct", path, t))
	}
	obj := r.object(t, path)
	req, _ := obj["required"].([]string)
	if len(req) != 1 {
		panic(fmt.Sprintf("generator: schema of %s: union type %s needs exactly one required key", path, t))
	}
	short := maps.Clone(obj["properties"].(schemaNode)[req[0]].(schemaNode))
	if short["type"] != "string" {
		panic(fmt.Sprintf("generator: schema of %s: the required key of %s is not a string", path, t))
	}
	return schemaNode{"oneOf": []any{short, obj}}
}

// parseSchemaTag splits a jsonschema tag into its description and whether a
// leading "required," marks the key as required.
func parseSchemaTag(tag string) (desc string, required bool) {
	if tag == "required" {
		return "", true
	}
	desc, required = strings.CutPrefix(tag, "required,")
	return desc, required
}

func keyPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// asciiJSON escapes every non-ASCII character of a JSON text as \uXXXX, so
// that a character such as U+212A KELVIN SIGN is not mistaken for a K.
func asciiJSON(data []byte) []byte {
	var out bytes.Buffer
	for _, r := range string(data) {
		switch {
		case r < utf8.RuneSelf:
			out.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return out.Bytes()
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func merged(a, b schemaNode) schemaNode {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
