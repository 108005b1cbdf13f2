package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestJSONShapeDocumented checks the JSON of explain and diff against the
// shapes docs/review.md documents (the blocks after "<!-- json-shape: NAME -->"):
// every key path with its type, one a line.
func TestJSONShapeDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/review.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{
		"explain": filepath.Join(goldenDir, "full", "explain.json"),
		"diff":    filepath.Join(diffDir, "json", "want.txt"),
	} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		shape(v, "", got)
		if want := documentedShape(t, string(readme), name); !slices.Equal(want, sortedKeys(got)) {
			t.Errorf("docs/review.md's %s JSON shape:\n%s\nthe output's:\n%s", name, strings.Join(want, "\n"), strings.Join(sortedKeys(got), "\n"))
		}
	}
}

// shape records "path: type" for every value in v.
func shape(v any, path string, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if path != "" {
			out[path+": object"] = true
		}
		for k, e := range v {
			shape(e, strings.TrimPrefix(path+"."+k, "."), out)
		}
	case []any:
		out[path+": array"] = true
		for _, e := range v {
			shape(e, path+"[]", out)
		}
	case nil:
		out[path+": null"] = true
	default:
		out[fmt.Sprintf("%s: %T", path, v)] = true
	}
}

func documentedShape(t *testing.T, readme, name string) []string {
	_, rest, ok := strings.Cut(readme, "<!-- json-shape: "+name+" -->\n```\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("no json-shape block for %s", name)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		path, _, _ := strings.Cut(l, "  #") // a comment after two spaces
		lines = append(lines, strings.TrimSpace(path))
	}
	slices.Sort(lines)
	return lines
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, strings.ReplaceAll(strings.ReplaceAll(k, "float64", "number"), ": bool", ": boolean"))
	}
	slices.Sort(out)
	return out
}
