package yamledit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/agentbox-dev/agentbox/internal/udiff"
	"go.yaml.in/yaml/v3"
)

// op is one edit of a golden case: add Entry, or remove the item whose
// value is remove.
type op struct {
	path   string
	add    *Entry
	remove string
}

var domains, cidrs = "network.domains", "network.cidrs"

func add(v string, ports ...int) *Entry { return &Entry{Key: "host", Value: v, Ports: ports} }

// The golden cases: testdata/IN.yaml edited by ops is testdata/want/NAME.yaml.
var cases = []struct {
	name, in string
	ops      []op
}{
	{"block-add", "block", []op{{path: domains, add: add("new.example.com")}}},
	{"block-add-wildcard", "block", []op{{path: domains, add: add("*.cdn.example.com")}}},
	{"block-add-ports", "block", []op{{path: domains, add: add("git.example.com", 22, 443)}}},
	{"block-add-cidrs", "block", []op{{path: cidrs, add: &Entry{Key: "cidr", Value: "198.18.0.0/24", Ports: []int{5432}}}}},
	{"block-remove-commented", "block", []op{{path: domains, remove: "registry.example.com"}}},
	{"block-remove-mapping", "block", []op{{path: domains, remove: "api.example.com"}}},
	{"block-remove-all", "block", []op{{path: domains, remove: "registry.example.com"}, {path: domains, remove: "api.example.com"}}},
	{"flow-add", "flow", []op{{path: domains, add: add("d.example.com")}}},
	{"flow-add-ports", "flow", []op{{path: domains, add: add("e.example.com", 8443)}}},
	{"flow-add-empty", "flow", []op{{path: cidrs, add: &Entry{Key: "cidr", Value: "198.18.0.0/24"}}}},
	{"flow-remove-first", "flow", []op{{path: domains, remove: "a.example.com"}}},
	{"flow-remove-middle", "flow", []op{{path: domains, remove: "b.example.com"}}},
	{"flow-remove-last", "flow", []op{{path: domains, remove: "c.example.com"}}},
	{"indentless-add", "indentless", []op{{path: domains, add: add("c.example.com")}}},
	{"indentless-add-profile", "indentless", []op{{path: "profiles.work.network.domains", add: add("more.example.com")}}},
	{"indentless-add-profile-cidrs", "indentless", []op{{path: "profiles.work.network.cidrs", add: &Entry{Key: "cidr", Value: "198.18.1.0/24"}}}},
	{"indentless-remove-profile", "indentless", []op{{path: "profiles.work.network.domains", remove: "work.example.com"}}},
	{"nonetwork-add", "nonetwork", []op{{path: domains, add: add("a.example.com")}}},
	{"nonetwork-add-ports", "nonetwork", []op{{path: domains, add: add("a.example.com", 22)}}},
	{"nulls-add", "nulls", []op{{path: domains, add: add("a.example.com")}}},
	{"nulls-add-tilde", "nulls", []op{{path: cidrs, add: &Entry{Key: "cidr", Value: "198.18.0.0/24"}}}},
	{"crlf-add", "crlf", []op{{path: domains, add: add("b.example.com")}}},
}

func TestGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", c.in+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got := in
			for _, o := range c.ops {
				got = apply(t, got, o)
			}
			checkSame(t, in, got, c.ops)
			want := filepath.Join("testdata", "want", c.name+".yaml")
			if golden.Update() {
				if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(want, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantData, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(wantData) {
				t.Errorf("%s differs (-want +got):\n%s", want, udiff.Unified(want, wantData, got, false, false))
			}
		})
	}
}

func apply(t *testing.T, data []byte, o op) []byte {
	t.Helper()
	path := strings.Split(o.path, ".")
	if o.add != nil {
		out, err := Append(data, path, *o.add)
		if err != nil {
			t.Fatalf("Append %s: %v", o.add.Value, err)
		}
		return out
	}
	items, err := List(data, path)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if it.Value == o.remove {
			out, err := Remove(data, path, i)
			if err != nil {
				t.Fatalf("Remove %s: %v", o.remove, err)
			}
			return out
		}
	}
	t.Fatalf("no item %s in %s", o.remove, o.path)
	return nil
}

// checkSame checks that the edit did what the parser sees: the list at
// each op's path gained or lost the entry, and nothing else in the
// document changed.
func checkSame(t *testing.T, in, out []byte, ops []op) {
	t.Helper()
	var a, b any
	if err := yaml.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &b); err != nil {
		t.Fatalf("the edited file does not parse: %v\n%s", err, out)
	}
	for _, o := range ops {
		editList(a, strings.Split(o.path, "."), func(list []any) []any {
			if o.add != nil {
				var e any = o.add.Value
				if o.add.Ports != nil {
					ports := []any{}
					for _, p := range o.add.Ports {
						ports = append(ports, p)
					}
					e = map[string]any{o.add.Key: o.add.Value, "ports": ports}
				}
				return append(list, e)
			}
			for i, it := range list {
				m, _ := it.(map[string]any)
				if it == o.remove || (m != nil && m["host"] == o.remove) {
					return append(list[:i], list[i+1:]...)
				}
			}
			return list
		})
	}
	if as, bs := dump(t, a), dump(t, b); as != bs {
		t.Errorf("the edit changed more than the list:\n%s", udiff.Unified("document", []byte(as), []byte(bs), false, false))
	}
}

// editList replaces the list at path in v with edit's result, creating
// what is missing.
func editList(v any, path []string, edit func([]any) []any) {
	m := v.(map[string]any)
	for _, k := range path[:len(path)-1] {
		next, _ := m[k].(map[string]any)
		if next == nil {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	k := path[len(path)-1]
	l, _ := m[k].([]any)
	m[k] = edit(append([]any{}, l...))
}

func dump(t *testing.T, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
