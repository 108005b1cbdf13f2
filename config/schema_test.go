package config_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/firewall"
	"github.com/agentbox-dev/agentbox/internal/testing/configtest"
	"github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/agentbox-dev/agentbox/internal/validate"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaFile is the committed copy of JSONSchema(); -update rewrites it.
const schemaFile = "../schema/agentbox.schema.json"

// schemaRejects lists the expected failures whose problems the schema
// expresses, each with the JSON pointers of the values it must reject (every
// one, as the loader reports every problem). The other fail-* cases are
// problems only the loader sees: locks, domain and CIDR syntax, sizes, YAML
// the JSON form cannot show (tabs, anchors, duplicate keys, several or no
// documents).
var schemaRejects = map[string][]string{
	"fail-unknown-keys":     {"", "/image"},
	"fail-wrong-types":      {"/version", "/agent", "/name", "/network/services", "/network/ports/0", "/resources/cpus", "/resources/pids"},
	"fail-enums":            {"/agent", "/network/services/0", "/network/services/1", "/network/services/2", "/devcontainer/ide"},
	"fail-bad-ports":        {"/network/ports/0", "/network/ports/1", "/network/domains/0/ports/0", "/network/domains/0/ports/1", "/network/domains/1/ports"},
	"fail-user-ids":         {"/image", "/image/user/uid", "/resources/cpus"},
	"fail-bad-cidrs":        {"/network/cidrs/6"},
	"fail-lookalikes":       {"/resources/memory", "/devcontainer/extensions/0"},
	"fail-dns-port":         {"/network/ports/1", "/network/domains/0/ports/0", "/network/cidrs/0/ports/1"},
	"fail-run-bad-duration": {"/run/timeout", "/run/max_timeout"},
	"fail-run-env":          {"/run/env/1", "/run/env/2", "/run/env/4"},
	"fail-shell-metacharacters": {
		"/image/packages/0", "/image/packages/1", "/image/packages/2",
		"/env/BAD NAME", "/env/X;Y", "/env/1ST",
		"/workspace/path", "/workspace/readonly/1",
		"/devcontainer/extensions/0", "/devcontainer/extensions/1",
	},
}

func TestJSONSchemaGolden(t *testing.T) {
	golden.CompareFile(t, schemaFile, config.JSONSchema())
}

// TestJSONSchemaFixtures validates every golden case and example: the valid
// ones must pass, the listed failures must not.
func TestJSONSchemaFixtures(t *testing.T) {
	sch := configtest.Schema(t, config.JSONSchema(), config.SchemaID)
	files, _ := filepath.Glob("../testdata/golden/*/" + config.ConfigFile)
	examples, _ := filepath.Glob("../examples/*/" + config.ConfigFile)
	files = append(files, examples...)
	if len(files) == 0 {
		t.Fatal("no fixtures found")
	}
	seen := map[string]bool{}
	for _, file := range files {
		dir := filepath.Dir(file)
		name := filepath.Base(dir)
		seen[name] = true
		t.Run(strings.TrimPrefix(filepath.ToSlash(dir), "../"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := configtest.Instance(t, data)
			fail := strings.HasPrefix(name, "fail-")
			if !ok {
				if !fail {
					t.Fatal("not one plain YAML document")
				}
				t.Skip("not one plain YAML document: the loader alone rejects it")
			}
			err = sch.Validate(v)
			want, rejects := schemaRejects[name]
			switch {
			case !fail && err != nil:
				t.Errorf("the schema rejects a valid file:\n%v", err)
			case rejects && err == nil:
				t.Error("the schema accepts an expected failure")
			case rejects:
				got := schemaLeafLocations(err)
				for _, w := range want {
					if !slices.Contains(got, w) {
						t.Errorf("the schema does not reject %q; it rejects %q:\n%v", w, got, err)
					}
				}
			}
		})
	}
	for name := range schemaRejects {
		if !seen[name] {
			t.Errorf("schemaRejects lists %s, which is no golden case", name)
		}
	}
}

// TestJSONSchemaNotStricter: files at the edges of what the loader accepts
// pass the schema too.
func TestJSONSchemaNotStricter(t *testing.T) {
	sch := configtest.Schema(t, config.JSONSchema(), config.SchemaID)
	for _, src := range []string{
		"{}",
		"image: ~\negress: ~\nnetwork: ~\nresources: ~\nenv: ~\nworkspace: ~\ndevcontainer: ~\nverify: ~\n",
		"image: {packages: ~, user: ~}\negress: {}\n" +
			"network: {services: ~, domains: ~, cidrs: ~, ports: ~}\nresources: {}\n" +
			"workspace: {readonly: ~, writable: ~, hidden: ~}\ndevcontainer: {extensions: ~}\n",
		"network: {domains: [{host: a.example.com, ports: ~}], cidrs: [{cidr: 198.18.0.0/24, ports: ~}]}\n",
		"network:\n  domains: [example.com, '*.example.org', EXAMPLE.net., {host: a.example.com}, {host: b.example.com, ports: ~}]\n" +
			"  cidrs: [10.0.0.0/8, 2001:db8::/32, 203.0.113.7, {cidr: 198.18.0.0/15, ports: [1, 65535]}]\n",
		"network: {services: [" + strings.Join(catalog.ServiceNames(), ", ") + "], ports: [1, 65535, 1]}\n",
		"env: {A: 1, B: true, C: 1.5, D: '', _x9: 0x10}\n",
		"version: 0x1\nimage: {user: {uid: 1, gid: 65534}}\n",
		"image: {user: {uid: 65534, gid: 1}}\n",
		"resources: {cpus: 1024, pids: 16, memory: 6m}\n",
		"resources: {cpus: 0.001, pids: 4194304, memory: 1GB}\n",
		"resources: {cpus: 1, memory: 8192Kb}\n",
		"name: a\n",
		"name: " + strings.Repeat("a", 63) + "\n",
		"image: {packages: [ab, 'a+b.c-d=1:2.3~rc+1-x', '" + strings.Repeat("a", 200) + "']}\n",
		"devcontainer: {ide: none, extensions: [a.b, A-1.b-2, '" + strings.Repeat("a", 198) + ".b']}\n",
		"workspace: {path: /a/b.c/@d+e-f_g, readonly: [x, a/b, .hidden/c]}\n",
		"run: ~\n",
		"run: {env: ~}\n",
		"run: {timeout: 1s, max_timeout: 168h, env: [A, _b9, AGENTBOX]}\n",
		"run: {timeout: 0h0m1s, max_timeout: 167h59m60s}\n",
	} {
		t.Run(src, func(t *testing.T) {
			if _, _, err := config.Decode(config.ConfigFile, []byte(src), t.TempDir()); err != nil {
				t.Fatalf("the loader rejects the case itself: %v", err)
			}
			v, ok := configtest.Instance(t, []byte(src))
			if !ok {
				t.Fatal("not one plain YAML document")
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("the schema rejects what the loader accepts:\n%v", err)
			}
		})
	}
}

// TestJSONSchemaNullScalars: a scalar key with nothing after it is an
// error for the schema as for the loader (a section, list or map with
// nothing is not set).
func TestJSONSchemaNullScalars(t *testing.T) {
	sch := configtest.Schema(t, config.JSONSchema(), config.SchemaID)
	for _, src := range []string{
		"version: ~\n", "name: ~\n", "agent: ~\n", "agent:\n", "image: {base: ~}\n", "image: {user: {uid: ~}}\n",
		"egress: {image: ~}\n", "resources: {cpus: ~}\n", "resources: {memory: ~}\n", "resources: {pids: ~}\n",
		"env: {X: ~}\n", "workspace: {path: ~}\n", "devcontainer: {ide: ~}\n", "verify: {allowed: ~}\n",
		"run: {timeout: ~}\n", "run: {max_timeout: ~}\n",
	} {
		if _, _, err := config.Decode(config.ConfigFile, []byte(src), t.TempDir()); err == nil {
			t.Errorf("the loader accepts %q", src)
		}
		if v, _ := configtest.Instance(t, []byte(src)); sch.Validate(v) == nil {
			t.Errorf("the schema accepts %q", src)
		}
	}
}

// TestJSONSchemaAtLimits: the largest file the loader accepts passes the
// schema, and one more entry in env or a list fails both.
func TestJSONSchemaAtLimits(t *testing.T) {
	sch := configtest.Schema(t, config.JSONSchema(), config.SchemaID)
	v, ok := configtest.Instance(t, []byte(configtest.AtLimits(config.MaxEntries, config.MaxEnvString, firewall.GatewayListenMax)))
	if !ok {
		t.Fatal("not one plain YAML document")
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("the schema rejects the file at the limits:\n%.2000v", err)
	}
	over := "network:\n  services:\n" + strings.Repeat("    - github\n", config.MaxEntries+1)
	if v, _ := configtest.Instance(t, []byte(over)); sch.Validate(v) == nil {
		t.Errorf("the schema accepts %d services", config.MaxEntries+1)
	}
}

// TestJSONSchemaPatternsNotStricter puts every ASCII character, and every
// character that strings.ToLower turns into ASCII, at or into every position
// of a valid value: whatever the loader's check accepts, the schema must.
func TestJSONSchemaPatternsNotStricter(t *testing.T) {
	sch := configtest.Schema(t, config.JSONSchema(), config.SchemaID)
	var chars []rune
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r < utf8.RuneSelf || utf8.ValidRune(r) && strings.ToLower(string(r)) != string(r) && strings.ToLower(string(r))[0] < utf8.RuneSelf {
			chars = append(chars, r)
		}
	}
	memory := func(s string) error { _, err := validate.Memory(s); return err }
	taskDuration := func(s string) error { _, err := config.ParseTaskDuration(s); return err }
	dir := t.TempDir()
	runEnvName := func(s string) error { // as the loader checks it, reserved names included
		name, _ := json.Marshal(s)
		_, _, err := config.Decode(config.ConfigFile, []byte(`{"run": {"env": [`+string(name)+`]}}`), dir)
		return err
	}
	tests := []struct {
		path   string // "[]": an item of the list; "{}": a key of the map
		base   []string
		loader func(string) error
	}{
		{"name", []string{"ab"}, validate.ProjectName},
		{"image.packages[]", []string{"ab", "ab=1"}, validate.DebianPackage},
		{"env{}", []string{"A_1"}, validate.EnvName},
		{"resources.memory", []string{"8192m", "8192mb"}, memory},
		{"workspace.path", []string{"/a/b"}, validate.ContainerPath},
		{"workspace.readonly[]", []string{"a/b"}, validate.RelPath},
		{"devcontainer.extensions[]", []string{"a.b"}, validate.Extension},
		{"run.timeout", []string{"1h2m3s", "5m"}, taskDuration},
		{"run.env[]", []string{"A_1"}, runEnvName},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			for _, base := range tt.base {
				if err := tt.loader(base); err != nil {
					t.Fatalf("the loader rejects the base value: %v", err)
				}
				for i := 0; i <= len(base); i++ {
					for _, r := range chars {
						edits := []string{base[:i] + string(r) + base[i:]} // insert
						if i < len(base) {
							edits = append(edits, base[:i]+string(r)+base[i+1:]) // replace
						}
						for _, s := range edits {
							if tt.loader(s) != nil {
								continue
							}
							if err := sch.Validate(schemaDoc(tt.path, s)); err != nil {
								t.Errorf("the schema rejects %q, which the loader accepts:\n%v", s, err)
							}
						}
					}
				}
			}
		})
	}
}

// schemaDoc returns the document that holds s at path.
func schemaDoc(path, s string) map[string]any {
	var v any = s
	if p, ok := strings.CutSuffix(path, "[]"); ok {
		path, v = p, []any{s}
	} else if p, ok := strings.CutSuffix(path, "{}"); ok {
		path, v = p, map[string]any{s: "x"}
	}
	keys := strings.Split(path, ".")
	for i := len(keys) - 1; i >= 0; i-- {
		v = map[string]any{keys[i]: v}
	}
	return v.(map[string]any)
}

// schemaLeafLocations returns the JSON pointers of the innermost causes of
// err; a rejected property name is located as its property.
func schemaLeafLocations(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	pointer := func(tokens []string) string {
		loc := ""
		for _, tok := range tokens {
			loc += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
		}
		return loc
	}
	var locs []string
	var walk func(e *jsonschema.ValidationError, parent []string)
	walk = func(e *jsonschema.ValidationError, parent []string) {
		if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			locs = append(locs, pointer(append(slices.Clip(parent), k.Property)))
			return
		}
		if len(e.Causes) == 0 {
			locs = append(locs, pointer(e.InstanceLocation))
		}
		for _, c := range e.Causes {
			walk(c, e.InstanceLocation)
		}
	}
	walk(ve, nil)
	return locs
}
