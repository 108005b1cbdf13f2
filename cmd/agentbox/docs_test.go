package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/agentbox-dev/agentbox/internal/testing/golden"
	"github.com/agentbox-dev/agentbox/internal/udiff"
	"github.com/spf13/cobra"
)

// commandDocsDir holds one Markdown page per command, rendered from the
// cobra tree by renderCommandDocs. `make docs` rewrites it.
const commandDocsDir = "../../docs/commands"

// regenerateDocs is what a drifted page's error tells the reader to run.
const regenerateDocs = "make docs (go test ./cmd/agentbox -run TestDocs -update)"

// TestDocsCommands fails when docs/commands differs from the command tree:
// a command, flag, example or help text changed without its page, a page of
// a command that is gone, or a page edited by hand.
func TestDocsCommands(t *testing.T) {
	got := renderCommandDocs(newRootCmd(testDeps(), io.Discard, io.Discard, new(bool)))
	if golden.Update() {
		if err := os.RemoveAll(commandDocsDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(commandDocsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range got {
			if err := os.WriteFile(filepath.Join(commandDocsDir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := golden.ReadTree(t, commandDocsDir)
	names := map[string]bool{}
	for n := range want {
		names[n] = true
	}
	for n := range got {
		names[n] = true
	}
	for _, n := range sortedKeys(names) {
		w, inWant := want[n]
		g, inGot := got[n]
		if d := udiff.Unified("docs/commands/"+n, w, g, !inWant, !inGot); d != "" {
			t.Errorf("docs/commands/%s is out of date with the command tree; run %s:\n%s", n, regenerateDocs, d)
		}
	}
}

// TestDocsCommandsDeterministic: two renderings of two fresh trees are the
// same bytes, and nothing of the environment (the user's directories, the
// version) reaches a page.
func TestDocsCommandsDeterministic(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/nonexistent/state-a")
	t.Setenv("XDG_CONFIG_HOME", "/nonexistent/config-a")
	a := renderCommandDocs(newRootCmd(testDeps(), io.Discard, io.Discard, new(bool)))
	t.Setenv("XDG_STATE_HOME", "/nonexistent/state-b")
	t.Setenv("XDG_CONFIG_HOME", "/nonexistent/config-b")
	b := renderCommandDocs(newRootCmd(testDeps(), io.Discard, io.Discard, new(bool)))
	if len(a) != len(b) {
		t.Fatalf("%d pages, then %d", len(a), len(b))
	}
	for n, data := range a {
		if !bytes.Equal(data, b[n]) {
			t.Errorf("%s differs between two renderings", n)
		}
		if bytes.Contains(data, []byte("/nonexistent/")) {
			t.Errorf("%s holds a path of the environment", n)
		}
	}
	for _, want := range []string{"agentbox.md", "agentbox_build.md", "agentbox_policy_add.md", "agentbox_completion_bash.md"} {
		if _, ok := a[want]; !ok {
			t.Errorf("no page %s among %d pages", want, len(a))
		}
	}
}

// renderCommandDocs renders a page for root and every available command
// below it (not hidden, not deprecated, not help), keyed by file name:
// "agentbox_policy_add.md" for `agentbox policy add`.
func renderCommandDocs(root *cobra.Command) map[string][]byte {
	out := map[string][]byte{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out[docName(c)] = renderCommandPage(c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	return out
}

func docName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// renderCommandPage lays out one command's page: what it is, its synopsis,
// the long help, examples, flags, the inherited flags and its neighbours.
func renderCommandPage(c *cobra.Command) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Code generated from the command tree by %s; DO NOT EDIT. -->\n\n", regenerateDocs)
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", c.CommandPath(), c.Short)
	section := func(title, text string) {
		if text = strings.TrimRight(text, " \n"); text != "" {
			fmt.Fprintf(&b, "## %s\n\n```\n%s\n```\n\n", title, text)
		}
	}
	if c.Runnable() {
		section("Synopsis", c.UseLine())
	}
	if c.Long != "" {
		section("Description", c.Long)
	}
	section("Examples", c.Example)
	section("Flags", c.NonInheritedFlags().FlagUsages())
	section("Global flags", c.InheritedFlags().FlagUsages())
	var links []string
	if p := c.Parent(); p != nil {
		links = append(links, fmt.Sprintf("- [%s](%s): %s", p.CommandPath(), docName(p), p.Short))
	}
	subs := c.Commands()
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	for _, s := range subs {
		if s.IsAvailableCommand() {
			links = append(links, fmt.Sprintf("- [%s](%s): %s", s.CommandPath(), docName(s), s.Short))
		}
	}
	if len(links) > 0 {
		fmt.Fprintf(&b, "## See also\n\n%s\n", strings.Join(links, "\n"))
	}
	return []byte(strings.TrimRight(b.String(), "\n") + "\n")
}

// TestDocsLinks checks every relative link of the Markdown documentation
// (README.md, ARCHITECTURE.md, CONTRIBUTING.md, docs/**/*.md): its file or
// directory exists in the repository, and its #anchor, if any, is a heading
// of the Markdown file it names (as GitHub makes anchors of headings).
func TestDocsLinks(t *testing.T) {
	const top = "../.."
	files := []string{"README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(top, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(top, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // file -> its headings' anchors
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		data, err := os.ReadFile(filepath.Join(top, file))
		if err != nil {
			t.Fatal(err)
		}
		anchors[file] = markdownAnchors(string(data))
		return anchors[file]
	}
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(filepath.Join(top, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(data)) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(l.target, "#")
			dest := file
			if path != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				if strings.HasPrefix(dest, "../") || filepath.IsAbs(path) {
					t.Errorf("%s:%d: link %q leads out of the repository", file, l.line, l.target)
					continue
				}
				if _, err := os.Stat(filepath.Join(top, dest)); err != nil {
					t.Errorf("%s:%d: link %q: no such file %s", file, l.line, l.target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: link %q: an anchor in a file that is not Markdown", file, l.line, l.target)
			} else if !anchorsOf(dest)[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", file, l.line, l.target, dest, anchor)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links checked: is the parser still finding them?", checked)
	}
}

type mdLink struct {
	line   int
	target string
}

// markdownLinks returns the targets of the inline links "[text](target)"
// outside fenced code blocks and inline code spans.
func markdownLinks(doc string) []mdLink {
	var out []mdLink
	fenced := false
	for i, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		l = stripCodeSpans(l)
		for {
			_, rest, ok := strings.Cut(l, "](")
			if !ok {
				break
			}
			target, after, ok := strings.Cut(rest, ")")
			if !ok {
				break
			}
			if target != "" && !strings.ContainsAny(target, " \t") {
				out = append(out, mdLink{i + 1, target})
			}
			l = after
		}
	}
	return out
}

// stripCodeSpans removes `code spans` from a line.
func stripCodeSpans(l string) string {
	var b strings.Builder
	in := false
	for _, r := range l {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markdownAnchors returns the anchors GitHub gives the headings of doc:
// lower case, only letters, digits, spaces, '-' and '_' kept, spaces made
// '-'; a repeated anchor gets "-1", "-2", ...
func markdownAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && isLetterOrDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func isLetterOrDigit(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// keyDocsFile is the index of agentbox.yaml's keys, rendered from the
// committed JSON Schema (itself held to the Go types by the schema tests).
const keyDocsFile = "../../docs/agentbox-yaml-keys.md"

// TestDocsConfigKeys fails when docs/agentbox-yaml-keys.md differs from
// what schema/agentbox.schema.json describes.
func TestDocsConfigKeys(t *testing.T) {
	data, err := os.ReadFile("../../schema/agentbox.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := renderKeyDocs(data)
	if err != nil {
		t.Fatal(err)
	}
	if golden.Update() {
		if err := os.WriteFile(keyDocsFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(keyDocsFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if d := udiff.Unified("docs/agentbox-yaml-keys.md", want, got, err != nil, false); d != "" {
		t.Errorf("docs/agentbox-yaml-keys.md is out of date with schema/agentbox.schema.json; run %s:\n%s", regenerateDocs, d)
	}
}

// schemaNode is the part of a JSON Schema the key index reads.
type schemaNode struct {
	Description          string                 `json:"description"`
	Type                 any                    `json:"type"`
	Enum                 []any                  `json:"enum"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
	OneOf                []*schemaNode          `json:"oneOf"`
}

// renderKeyDocs lays out one table row per key of the schema, by path
// ("network.domains", "profiles.NAME.network"), in the schema's key order
// (sorted).
func renderKeyDocs(schema []byte) ([]byte, error) {
	var root schemaNode
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("reading the schema: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Code generated from schema/agentbox.schema.json by %s; DO NOT EDIT. -->\n\n", regenerateDocs)
	b.WriteString("# agentbox.yaml: every key\n\n")
	fmt.Fprintf(&b, "%s The rules in full, with examples: [configuration.md](configuration.md).\n\n", root.Description)
	b.WriteString("| key | type | meaning |\n|---|---|---|\n")
	var walk func(prefix string, n *schemaNode) error
	walk = func(prefix string, n *schemaNode) error {
		for _, k := range sortedKeysOf(n.Properties) {
			p := n.Properties[k]
			path := prefix + k
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", path, schemaType(p), mdCell(p.Description))
			if len(p.Properties) > 0 {
				if err := walk(path+".", p); err != nil {
					return err
				}
			}
			var extra schemaNode
			if len(p.AdditionalProperties) > 0 && p.AdditionalProperties[0] == '{' {
				if err := json.Unmarshal(p.AdditionalProperties, &extra); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if len(extra.Properties) > 0 {
					if err := walk(path+".NAME.", &extra); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := walk("", &root); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func sortedKeysOf(m map[string]*schemaNode) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// schemaType names a node's type for a reader: "string", "list of
// integer", "one of claude, codex", "map".
func schemaType(n *schemaNode) string {
	if len(n.Enum) > 0 {
		var vs []string
		for _, v := range n.Enum {
			if v != nil {
				vs = append(vs, fmt.Sprintf("`%v`", v))
			}
		}
		return "one of " + strings.Join(vs, ", ")
	}
	if len(n.OneOf) > 0 {
		var ts []string
		for _, o := range n.OneOf {
			ts = append(ts, schemaType(o))
		}
		return strings.Join(ts, " or ")
	}
	var types []string
	switch t := n.Type.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				types = append(types, s)
			}
		}
	}
	var out []string
	for _, t := range types {
		switch {
		case t == "array" && n.Items != nil:
			out = append(out, "list of "+schemaType(n.Items))
		case t == "object" && len(n.Properties) == 0:
			out = append(out, "map")
		default:
			out = append(out, t)
		}
	}
	return strings.Join(out, " or ")
}

// mdCell makes text fit one table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// TestDocsQuickstart checks, in every test run, the shape that the e2e's
// Quickstart (internal/e2e/quickstart_test.go, build tag e2e) reads from
// README.md: one "<!-- quickstart:" marker, a fenced block right after it,
// and in it only agentbox and git command lines that agentbox's own
// commands parse (cobra knows each agentbox subcommand).
func TestDocsQuickstart(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- quickstart:"
	if n := strings.Count(string(data), "\n"+marker); n != 1 {
		t.Fatalf("README.md has %d quickstart markers, want 1", n)
	}
	_, rest, _ := strings.Cut(string(data), "\n"+marker)
	lines := strings.Split(rest, "\n")[1:]
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "```") {
		t.Fatalf("README.md: the quickstart marker is not followed by a code block")
	}
	root := newRootCmd(testDeps(), io.Discard, io.Discard, new(bool))
	var cmds []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "```") {
			break
		}
		if i := strings.Index(l, "  #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		cmds = append(cmds, l)
		fields := strings.Fields(l)
		switch fields[0] {
		case "git":
		case "agentbox":
			if c, _, err := root.Find(fields[1:]); err != nil || c == root {
				t.Errorf("README.md's quickstart: %q names no agentbox command", l)
			}
		default:
			t.Errorf("README.md's quickstart: %q is neither agentbox nor git", l)
		}
	}
	if len(cmds) < 5 || cmds[0] != "agentbox init --agent claude" {
		t.Errorf("README.md's quickstart block holds %q", cmds)
	}
}
