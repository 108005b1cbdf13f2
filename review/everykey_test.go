package review

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// keyEdits is one edit per key of the schema, made to the project in
// testdata/every-key (which writes every key once): the value written in
// place of the key's ("[]" takes the list's first mapping, "*" the profile
// ci). "" is a key with no other valid value.
var keyEdits = map[string]string{
	"version":                              "",
	"name":                                 "acme-other",
	"agent":                                "none",
	"image.base":                           "debian:bookworm-slim",
	"image.packages":                       "[jq, make, python3]",
	"image.user.uid":                       "1001",
	"image.user.gid":                       "1001",
	"egress.image":                         "node:24-bookworm-slim",
	"network.services":                     "[github, pypi]",
	"network.domains[].host":               "evil.acme.test",
	"network.domains[].ports":              "[443, 6000]",
	"network.cidrs[].cidr":                 "198.18.11.0/24",
	"network.cidrs[].ports":                "[443, 9443]",
	"network.ports":                        "[443, 8080]",
	"resources.cpus":                       "4",
	"resources.memory":                     "8g",
	"resources.pids":                       "4096",
	"env":                                  "{ACME_ENV: sandbox, LD_PRELOAD: /workspace/x.so}",
	"secrets":                              "[ANTHROPIC_API_KEY, GH_TOKEN]",
	"workspace.path":                       "/work",
	"workspace.readonly":                   "[deploy]",
	"workspace.writable":                   "[.vscode/extensions.json, .claude]",
	"workspace.hidden":                     `["!.env.example", .env, ".env.*"]`,
	"devcontainer.ide":                     "none",
	"devcontainer.extensions":              "[ms-python.python, acme.tool]",
	"verify.allowed":                       "registry.acme.test:5000",
	"verify.unlisted_name":                 "nowhere.example",
	"verify.unlisted_address":              "1.0.0.1:443",
	"verify.resolver":                      "1.0.0.1",
	"verify.ipv6_address":                  `"[2606:4700:4700::1001]:443"`,
	"verify.metadata_address":              "169.254.170.2:80",
	"run.timeout":                          "2h",
	"run.max_timeout":                      "8h",
	"run.env":                              "[ACME_DEPLOY_TOKEN, NPM_TOKEN]",
	"run.copy_login":                       "true",
	"elevation.allowed":                    "false",
	"elevation.max_duration":               "4h",
	"elevation.request_timeout":            "30m",
	"elevation.never":                      "[198.51.100.0/24]",
	"profile":                              "ci",
	"profiles.*.from":                      "locked",
	"profiles.*.network.services":          "[github, pypi]",
	"profiles.*.network.domains[].host":    "evil.acme.test",
	"profiles.*.network.domains[].ports":   "[443, 9000]",
	"profiles.*.network.cidrs[].cidr":      "198.18.31.0/24",
	"profiles.*.network.cidrs[].ports":     "[443, 9443]",
	"profiles.*.network.ports":             "[443, 8080]",
	"profiles.*.resources.cpus":            "3",
	"profiles.*.resources.memory":          "4g",
	"profiles.*.resources.pids":            "1024",
	"profiles.*.elevation.allowed":         "false",
	"profiles.*.elevation.max_duration":    "2h",
	"profiles.*.elevation.request_timeout": "20m",
	"profiles.*.elevation.never":           "[]",
	"profiles.*.workspace.readonly":        "[]",
	"profiles.*.workspace.hidden":          `["*.pem", "!server.pem"]`,
	"git.name":                             "Other Agent",
	"git.email":                            "other@acme.test",
	"git.forges[].host":                    "docs.acme.test",
	"git.forges[].token":                   "GH_PUSH_TOKEN",
	"git.forges[].repos":                   "[acme/other]",
	"git.forges[].push[].repo":             "acme/other",
	"git.forges[].push[].branches":         `["agent/*", "release-*"]`,
	"kubernetes.namespace":                 "other",
	"kubernetes.registry":                  "registry.acme.test:5000/other",
	"kubernetes.ttl_after_finished":        "3h",
}

// TestEveryKeyClassified makes one edit per key of the schema to a project
// that writes every key, and diffs it with the project: a key that is part
// of the Sandbox must give a row citing it (or the entry or section it is
// in), a key declared as granting nothing must give no widens or narrows
// row. So no key of agentbox.yaml is left unclassified.
func TestEveryKeyClassified(t *testing.T) {
	src, lock, base := everyKey(t)
	for _, key := range schemaKeys(t) {
		t.Run(key, func(t *testing.T) {
			value, ok := keyEdits[key]
			if !ok {
				t.Fatalf("no edit for key %s in keyEdits", key)
			}
			role := Keys[key]
			if value == "" {
				if role.Reason == "" {
					t.Fatalf("key %s has no edit, but it is part of the Sandbox", key)
				}
				return
			}
			edited, concrete := editKey(t, src, key, value)
			head, err := explainSource(string(edited), string(lock))
			if err != nil {
				t.Fatalf("%s: %s: %v", key, value, err)
			}
			rows := DiffSandboxes(base, head)
			if role.Reason != "" {
				for _, r := range rows {
					if r.Kind == Widens || r.Kind == Narrows {
						t.Errorf("%s (%s) is declared as granting nothing, but: %s", key, role.Reason, rowLines([]DiffRow{r}))
					}
				}
				return
			}
			if len(rows) == 0 {
				t.Fatalf("%s: %s gives no row", concrete, value)
			}
			for _, r := range rows {
				if relatedKey(r.Key, concrete) {
					return
				}
			}
			t.Errorf("%s: %s gives no row citing it:\n%s", concrete, value, rowLines(rows))
		})
	}
}

// everyKey is testdata/every-key, the project that writes every key of
// agentbox.yaml and agentbox.lock: both files, and the sandbox they make.
func everyKey(t *testing.T) (src, lock []byte, base *Sandbox) {
	t.Helper()
	dir := filepath.Join("testdata", "every-key")
	src, err := os.ReadFile(filepath.Join(dir, "agentbox.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if lock, err = os.ReadFile(filepath.Join(dir, "agentbox.lock")); err != nil {
		t.Fatal(err)
	}
	if base, err = explainSource(string(src), string(lock)); err != nil {
		t.Fatal(err)
	}
	return src, lock, base
}

var indexRe = regexp.MustCompile(`\[[^\]]*\]`)

// relatedKey reports whether a row's key is the edited key, an entry or
// section that holds it, or a key within it (indices aside).
func relatedKey(rowKey, edited string) bool {
	a, b := indexRe.ReplaceAllString(rowKey, ""), indexRe.ReplaceAllString(edited, "")
	return a != "" && (a == b || strings.HasPrefix(b, a+".") || strings.HasPrefix(a, b+"."))
}

// editKey writes value at key in the YAML source, and returns the new
// source and the key's concrete path (with indices and the profile's name).
func editKey(t *testing.T, src []byte, key, value string) ([]byte, string) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(value), &v); err != nil {
		t.Fatalf("edit of %s: %v", key, err)
	}
	n, concrete := doc.Content[0], ""
	segs := strings.Split(strings.ReplaceAll(key, "*", "ci"), ".")
	for i, seg := range segs {
		name, list := strings.CutSuffix(seg, "[]")
		concrete = strings.TrimPrefix(concrete+"."+name, ".")
		n = mappingValue(t, n, name, key)
		if i == len(segs)-1 {
			*n = *v.Content[0]
			break
		}
		if list {
			j := firstMapping(n)
			if j < 0 {
				t.Fatalf("%s: the list %s has no mapping", key, concrete)
			}
			concrete += "[" + strconv.Itoa(j) + "]"
			n = n.Content[j]
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return out, concrete
}

func mappingValue(t *testing.T, n *yaml.Node, name, key string) *yaml.Node {
	t.Helper()
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i+1]
		}
	}
	t.Fatalf("%s: testdata/every-key/agentbox.yaml does not write %s", key, name)
	return nil
}

func firstMapping(n *yaml.Node) int {
	for i, c := range n.Content {
		if c.Kind == yaml.MappingNode {
			return i
		}
	}
	return -1
}
