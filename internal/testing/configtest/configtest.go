// Package configtest holds what the tests of config and of the generator
// share about agentbox.yaml (it imports neither, so config's own tests can
// use it): the largest file the loader accepts, the JSON
// Schema compiled for validation with the YAML it validates, and the
// characters that case folding turns into ASCII.
package configtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// dnsPort is the port no allowlist entry may name.
const dnsPort = 53

// AtLimits returns an agentbox.yaml with maxEntries entries in env and in
// every list, and one environment string of maxEnvString bytes: the largest
// file of each kind that the loader accepts; the domains name
// maxNamePorts ports in all (443 among them), the most the gateway listens
// on.
func AtLimits(maxEntries, maxEnvString, maxNamePorts int) string {
	var b strings.Builder
	list := func(indent, key string, item func(i int) string) {
		fmt.Fprintf(&b, "%s%s:\n", indent, key)
		for i := range maxEntries {
			fmt.Fprintf(&b, "%s  - %s\n", indent, item(i))
		}
	}
	ports := func(n int) string { // n ports, skipping 53
		var ps []string
		for p := 1; len(ps) < n; p++ {
			if p != dnsPort {
				ps = append(ps, fmt.Sprint(p))
			}
		}
		return "[" + strings.Join(ps, ", ") + "]"
	}
	b.WriteString("agent: claude\nimage:\n")
	list("  ", "packages", func(i int) string { return fmt.Sprintf("pkg%d", i) })
	b.WriteString("network:\n")
	list("  ", "services", func(i int) string { return []string{"github", "pypi", "crates"}[i%3] })
	list("  ", "domains", func(i int) string {
		// The ports of names stop where the gateway's listeners do (443
		// is the catalog's); the other entries reuse them in many groups.
		if i == 0 {
			return "{host: all-ports.example.com, ports: " + ports(maxNamePorts-1) + "}"
		}
		p := 1 + i%(maxNamePorts-2)
		if p == dnsPort {
			p = maxNamePorts - 1
		}
		return fmt.Sprintf("{host: d%d.example.com, ports: [%d, 443]}", i, p)
	})
	list("  ", "cidrs", func(i int) string { return fmt.Sprintf("{cidr: 198.18.%d.%d, ports: [%d]}", i/256, i%256, 2000+i) })
	b.WriteString("  ports: " + ports(maxEntries) + "\n")
	b.WriteString("env:\n")
	for i := range maxEntries - 1 {
		fmt.Fprintf(&b, "  V%d: value %d\n", i, i)
	}
	fmt.Fprintf(&b, "  BIG: %s\n", strings.Repeat("x", maxEnvString-len("BIG=")-1))
	b.WriteString("workspace:\n")
	list("  ", "readonly", func(i int) string { return fmt.Sprintf("docs/d%d", i) })
	list("  ", "writable", func(i int) string { return []string{".vscode", ".idea"}[i%2] })
	list("  ", "hidden", func(i int) string { return fmt.Sprintf("secret%d.*", i) })
	b.WriteString("devcontainer:\n")
	list("  ", "extensions", func(i int) string { return fmt.Sprintf("pub.ext%d", i) })
	b.WriteString("run:\n  timeout: 168h\n  max_timeout: 168h\n")
	list("  ", "env", func(i int) string { return fmt.Sprintf("R%d", i) })
	return b.String()
}

// Schema compiles the JSON Schema doc, whose $id is id, for validating
// instances.
func Schema(t *testing.T, doc []byte, id string) *jsonschema.Schema {
	t.Helper()
	d, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, d); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// Instance converts data to the JSON value the schema sees. ok is false
// when data is not exactly one YAML document without anchors, aliases, merge
// keys, duplicate keys or non-string keys: the loader rejects those before it
// reads any key, and JSON cannot show them.
func Instance(t *testing.T, data []byte) (v any, ok bool) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, second yaml.Node
	if err := dec.Decode(&doc); err != nil || len(doc.Content) == 0 || !plainYAML(&doc) {
		return nil, false
	}
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		return nil, false
	}
	var raw any
	if err := doc.Decode(&raw); err != nil {
		return nil, false
	}
	js, err := json.Marshal(raw)
	if err != nil {
		return nil, false
	}
	v, err = jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

func plainYAML(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" || n.Tag == "!!merge" {
		return false
	}
	for _, c := range n.Content {
		if !plainYAML(c) {
			return false
		}
	}
	return true
}

// LookAlikes are characters that strings.ToLower, ToUpper or EqualFold turn
// into ASCII letters, or that look like them.
var LookAlikes = []string{
	"\u212A", // KELVIN SIGN: ToLower gives k
	"\u212B", // ANGSTROM SIGN: ToLower gives U+00E5
	"\u0130", // LATIN CAPITAL LETTER I WITH DOT ABOVE: ToLower gives i
	"\u0131", // LATIN SMALL LETTER DOTLESS I: ToUpper gives I
	"\u017F", // LATIN SMALL LETTER LONG S: EqualFold with s
	"\uFF4B", // FULLWIDTH LATIN SMALL LETTER K
	"\u043A", // CYRILLIC SMALL LETTER KA
}

// FuzzSeeds are the seeds of the loader's fuzz tests besides the golden
// cases: shell in values, ports at their bounds, pinned packages, bytes the
// YAML parser refuses, and look-alikes of ASCII letters.
func FuzzSeeds() [][]byte {
	var seeds [][]byte
	seeds = append(seeds, []byte("agent: claude\nenv: {A: \"$(id)\\n'\"}\n"))
	seeds = append(seeds, []byte("network: {domains: [{host: a.b, ports: [1, 65535]}], cidrs: [::1]}\n"))
	seeds = append(seeds, []byte("image: {packages: [curl=1, curl=2]}\n"))
	seeds = append(seeds, []byte("image: {packages: [git=1]}\n"))
	// What the YAML parser refuses without a line: bytes that are not
	// UTF-8, NUL and other control characters, UTF-16.
	seeds = append(seeds, []byte("agent: claude\nname: \"a\xffb\"\n"))
	seeds = append(seeds, []byte("agent: claude\nenv: {X: \"a\x00b\"}\n"))
	seeds = append(seeds, []byte("agent: claude\r# \x1b[31m\n"))
	seeds = append(seeds, []byte("\xfe\xff\x00a\x00:\x00 \x00b\x00\n"))
	// Look-alikes: characters that Unicode case folding turns into ASCII.
	for _, s := range LookAlikes {
		seeds = append(seeds, []byte("network: {domains: [\""+s+"ubernetes.io\"]}\n"))
		seeds = append(seeds, []byte("resources: {memory: \"8192"+s+"\"}\n"))
		seeds = append(seeds, []byte("name: \""+s+"elvin\"\ndevcontainer: {extensions: [\"a."+s+"\"]}\n"))
		seeds = append(seeds, []byte("image: {packages: [\""+s+"url\"]}\nworkspace: {path: \"/"+s+"\", readonly: [\""+s+"\"]}\n"))
		seeds = append(seeds, []byte("agent: \"cl"+s+"ude\"\nnetwork: {services: [\"git"+s+"ub\"]}\nenv: {\""+s+"\": x}\n"))
	}
	return seeds
}

// Placed matches an error line with its place in file: file:line:col, or file:line for a
// YAML syntax error (the parser gives no column).
func Placed(file string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `:[1-9][0-9]*:(([1-9][0-9]*: )| invalid YAML: )`)
}
