package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestVerifyDefaultsInSchema: the schema's description of each verify key
// names the default the probes use.
func TestVerifyDefaultsInSchema(t *testing.T) {
	want := map[string]string{
		"unlisted_name":    DefaultUnlistedNames[0],
		"unlisted_address": DefaultUnlistedAddress,
		"resolver":         DefaultResolver,
		"ipv6_address":     DefaultIPv6Address,
		"metadata_address": DefaultMetadataAddress,
	}
	typ := reflect.TypeFor[wireVerify]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		key := f.Tag.Get("yaml")
		if d, ok := want[key]; ok && !strings.Contains(f.Tag.Get("jsonschema"), "Default: "+d) {
			t.Errorf("verify.%s: the schema's description lacks %q: %s", key, "Default: "+d, f.Tag.Get("jsonschema"))
		}
		delete(want, key)
	}
	for k := range want {
		t.Errorf("verify.%s: no such key", k)
	}
}
