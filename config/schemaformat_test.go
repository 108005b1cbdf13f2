package config

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestJSONSchemaFormat(t *testing.T) {
	got := JSONSchema()
	if !bytes.Equal(got, JSONSchema()) {
		t.Fatal("two calls returned different schemas")
	}
	// Sorted keys, two-space indent, one trailing newline, ASCII only: what
	// encoding/json writes for the same value.
	var v any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, asciiJSON(append(want, '\n'))) {
		t.Errorf("JSONSchema() is not canonical indented JSON:\n%s", got)
	}
	for i, b := range got {
		if b >= utf8.RuneSelf {
			t.Fatalf("non-ASCII byte at offset %d", i)
		}
	}
	m := v.(map[string]any)
	for key, want := range map[string]string{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id":     SchemaID,
		"title":   ConfigFile,
	} {
		if m[key] != want {
			t.Errorf("%s = %v, want %q", key, m[key], want)
		}
	}
}
