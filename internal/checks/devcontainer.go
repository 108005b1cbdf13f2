package checks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/tailscale/hujson"
)

// Devcontainer parses a devcontainer.json as JSONC with hujson (comments
// and trailing commas allowed), standardizes it and decodes it with
// encoding/json. The top level must be an object without duplicate keys
// (at any depth), and the keys of a compose-based Dev Container must be
// present with the right types:
//
//   - dockerComposeFile: a non-empty string or a non-empty array of
//     non-empty strings
//   - service: a non-empty string
//   - runServices: an array of strings that contains service
//   - workspaceFolder: an absolute path
//   - remoteUser: a non-empty string
//   - shutdownAction: "none" or "stopCompose"
//
// Other keys are not checked. Errors name the line of the offending key.
func Devcontainer(data []byte) error {
	ast, err := hujson.Parse(bytes.Clone(data)) // Parse aliases its input, and Standardize rewrites it
	if err != nil {
		return fmt.Errorf("devcontainer: %w", err)
	}
	if _, ok := ast.Value.(*hujson.Object); !ok {
		return errors.New("devcontainer: top level is not an object")
	}
	lines := map[string]int{} // top-level key -> line
	if err := noDuplicateKeys(&ast, data, lines); err != nil {
		return err
	}
	ast.Standardize()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(ast.Pack(), &top); err != nil {
		return fmt.Errorf("devcontainer: %w", err)
	}
	d := devcontainerChecker{top: top, lines: lines}
	return errors.Join(
		d.composeFiles(),
		d.service(),
		d.nonEmptyString("remoteUser"),
		d.absPath("workspaceFolder"),
		d.enum("shutdownAction", "none", "stopCompose"),
	)
}

// noDuplicateKeys walks every object in v and fails on a repeated member
// name; it records the line of each top-level member in lines.
func noDuplicateKeys(top *hujson.Value, data []byte, lines map[string]int) error {
	for v := range top.All() {
		obj, ok := v.Value.(*hujson.Object)
		if !ok {
			continue
		}
		seen := map[string]bool{}
		for _, m := range obj.Members {
			lit, _ := m.Name.Value.(hujson.Literal)
			name := lit.String()
			line := lineOf(data, m.Name.StartOffset)
			if seen[name] {
				return fmt.Errorf("devcontainer line %d: duplicate key %q", line, name)
			}
			seen[name] = true
			if v == top {
				lines[name] = line
			}
		}
	}
	return nil
}

func lineOf(data []byte, offset int) int {
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}

type devcontainerChecker struct {
	top   map[string]json.RawMessage
	lines map[string]int
}

// errorf reports a problem with key, at its line when it is present.
func (d devcontainerChecker) errorf(key, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line, ok := d.lines[key]; ok {
		return fmt.Errorf("devcontainer line %d: %s %s", line, key, msg)
	}
	return fmt.Errorf("devcontainer: %s %s", key, msg)
}

// str decodes key as a string; it fails when key is missing or not a
// string.
func (d devcontainerChecker) str(key string) (s string, err error) {
	raw, ok := d.top[key]
	if !ok {
		return "", d.errorf(key, "is missing")
	}
	if err := json.Unmarshal(raw, &s); err != nil || raw[0] != '"' {
		return "", d.errorf(key, "must be a string, got %s", jsonKind(raw))
	}
	return s, nil
}

func (d devcontainerChecker) nonEmptyString(key string) error {
	s, err := d.str(key)
	if err != nil {
		return err
	}
	if s == "" {
		return d.errorf(key, "must not be empty")
	}
	return nil
}

func (d devcontainerChecker) absPath(key string) error {
	s, err := d.str(key)
	if err != nil {
		return err
	}
	if !path.IsAbs(s) {
		return d.errorf(key, "must be an absolute path, got %q", s)
	}
	return nil
}

func (d devcontainerChecker) enum(key string, valid ...string) error {
	s, err := d.str(key)
	if err != nil {
		return err
	}
	if !slices.Contains(valid, s) {
		return d.errorf(key, "must be one of %q, got %q", valid, s)
	}
	return nil
}

func (d devcontainerChecker) strings(key string) ([]string, error) {
	raw, ok := d.top[key]
	if !ok {
		return nil, d.errorf(key, "is missing")
	}
	if raw[0] != '[' {
		return nil, d.errorf(key, "must be an array of strings, got %s", jsonKind(raw))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, d.errorf(key, "is not a valid array: %v", err)
	}
	list := make([]string, len(elems))
	for i, e := range elems {
		// Unmarshal would turn null into "": check the type first.
		if e[0] != '"' || json.Unmarshal(e, &list[i]) != nil {
			return nil, d.errorf(key, "must be an array of strings, got %s at index %d", jsonKind(e), i)
		}
	}
	return list, nil
}

func (d devcontainerChecker) composeFiles() error {
	const key = "dockerComposeFile"
	raw, ok := d.top[key]
	if !ok {
		return d.errorf(key, "is missing")
	}
	if raw[0] == '"' {
		return d.nonEmptyString(key)
	}
	if raw[0] != '[' {
		return d.errorf(key, "must be a string or an array of strings, got %s", jsonKind(raw))
	}
	files, err := d.strings(key)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return d.errorf(key, "must not be an empty array")
	}
	if slices.Contains(files, "") {
		return d.errorf(key, "must not contain an empty string")
	}
	return nil
}

func (d devcontainerChecker) service() error {
	if err := d.nonEmptyString("service"); err != nil {
		return errors.Join(err, d.runServices(""))
	}
	s, _ := d.str("service")
	return d.runServices(s)
}

// runServices checks runServices; service is "" when service is itself
// invalid, in which case only the type is checked.
func (d devcontainerChecker) runServices(service string) error {
	const key = "runServices"
	list, err := d.strings(key)
	if err != nil {
		return err
	}
	if service != "" && !slices.Contains(list, service) {
		return d.errorf(key, "must contain the service %q, got %q", service, list)
	}
	return nil
}

// jsonKind names the JSON type of a raw value for messages.
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
