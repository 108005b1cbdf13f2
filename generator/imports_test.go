package generator

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportDirection enforces the one direction of imports written in
// ARCHITECTURE.md: cmd/agentbox -> (task, review, bump) -> generator ->
// config -> (firewall, images, catalog), task -> sandbox, egress ->
// (sandbox, audit), generator -> lockfile -> images, generator -> templates,
// with internal/ helpers usable by all and importing none of them; catalog imports nothing from the project but internal/validate; and
// no code that ships imports internal/testing/, the test-only packages.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/agentbox-dev/agentbox/"
	domain := []string{"cmd/", "task", "sandbox", "egress", "audit", "review", "bump", "generator", "config", "firewall", "lockfile", "images", "catalog", "templates"}
	runtime := []string{"task", "sandbox", "egress", "audit"}
	views := []string{"review", "bump"}
	forbidden := map[string][]string{
		"cmd/*":              {"internal/testing/"},
		"task":               append([]string{"cmd/", "internal/testing/"}, views...),
		"task/*":             append([]string{"cmd/", "internal/testing/"}, views...),
		"sandbox":            append([]string{"cmd/", "task", "egress", "audit", "internal/testing/"}, views...),
		"egress":             append([]string{"cmd/", "task", "internal/testing/"}, views...),
		"audit":              append(domain, "internal/testing/"),
		"review":             append([]string{"cmd/", "bump", "internal/testing/"}, runtime...),
		"bump":               append([]string{"cmd/", "review", "internal/testing/"}, runtime...),
		"generator":          append([]string{"cmd/", "review", "bump", "internal/testing/"}, runtime...),
		"config":             append([]string{"cmd/", "review", "bump", "generator", "lockfile", "templates", "internal/testing/"}, runtime...),
		"lockfile":           append([]string{"cmd/", "review", "bump", "generator", "config", "firewall", "catalog", "templates", "internal/testing/"}, runtime...),
		"firewall":           append([]string{"cmd/", "review", "bump", "generator", "config", "lockfile", "images", "catalog", "templates", "internal/testing/"}, runtime...),
		"images":             append([]string{"cmd/", "review", "bump", "generator", "config", "lockfile", "firewall", "catalog", "templates", "internal/testing/"}, runtime...),
		"templates":          append([]string{"cmd/", "review", "bump", "generator", "config", "lockfile", "firewall", "images", "catalog", "internal/"}, runtime...),
		"internal/*":         append(domain, "internal/testing/"),
		"internal/testing/*": domain,
	}
	// allowed lists the only project packages a package may import.
	allowed := map[string][]string{
		"catalog": {"internal/validate"},
	}
	if _, err := os.Stat("../internal/testing/golden"); err != nil {
		t.Fatal("run from the generator directory")
	}
	for pkg, bad := range forbidden {
		for _, imp := range projectImports(t, pkg, mod) {
			for _, b := range bad {
				if strings.HasPrefix(imp.path, b) {
					t.Errorf("%s imports %s, against the import direction", imp.file, mod+imp.path)
				}
			}
		}
	}
	for pkg, ok := range allowed {
		for _, imp := range projectImports(t, pkg, mod) {
			if !slices.Contains(ok, imp.path) {
				t.Errorf("%s imports %s; %s may import only %q from the project", imp.file, mod+imp.path, pkg, ok)
			}
		}
	}
}

// projectImport is one import of a project package by a non-test file.
type projectImport struct {
	file string
	path string // without the module prefix
}

// projectImports returns the project imports of the non-test files of the
// packages matching the glob pkg.
func projectImports(t *testing.T, pkg, mod string) []projectImport {
	t.Helper()
	var out []projectImport
	dirs, _ := filepath.Glob(filepath.Join("..", pkg))
	if len(dirs) == 0 {
		t.Fatalf("no package matches %s", pkg)
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if rest, ok := strings.CutPrefix(path, mod); ok {
					out = append(out, projectImport{file, rest})
				}
			}
		}
	}
	return out
}

// TestReadmeDrawsImports checks ARCHITECTURE.md's drawing of who imports whom
// against the code: every package with code that ships, and exactly its
// project imports.
func TestReadmeDrawsImports(t *testing.T) {
	const mod = "github.com/agentbox-dev/agentbox/"
	readme, err := os.ReadFile("../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	drawn := readmeImports(t, string(readme))
	for _, pkg := range packageDirs(t) {
		got := map[string]bool{}
		for _, imp := range projectImports(t, pkg, mod) {
			got[imp.path] = true
		}
		want, ok := drawn[pkg]
		if !ok {
			t.Errorf("ARCHITECTURE.md's drawing of imports has no %s", pkg)
			continue
		}
		if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
			t.Errorf("ARCHITECTURE.md draws %s -> %v; the code imports %v", pkg, w, g)
		}
		delete(drawn, pkg)
	}
	for pkg := range drawn {
		t.Errorf("ARCHITECTURE.md draws %s, a package with no code", pkg)
	}
}

// readmeImports parses the drawing that follows "Who imports whom": lines
// "a, b -> c, d" (either side may go on over the next lines; "(nothing)"
// for none), into package -> imports.
func readmeImports(t *testing.T, readme string) map[string]map[string]bool {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "Who imports whom")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no \"Who imports whom\"")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, _ := strings.Cut(rest, "```")
	out := map[string]map[string]bool{}
	var left, right []string
	arrow := false // the entry being read has its "->"
	flush := func() {
		for _, p := range left {
			out[p] = map[string]bool{}
			for _, imp := range right {
				out[p][imp] = true
			}
		}
		left, right, arrow = nil, nil, false
	}
	list := func(s string) []string {
		var l []string
		for f := range strings.SplitSeq(s, ",") {
			if f = strings.TrimSpace(f); f != "" && f != "(nothing)" {
				l = append(l, f)
			}
		}
		return l
	}
	for line := range strings.SplitSeq(block, "\n") {
		l, r, hasArrow := strings.Cut(line, "->")
		switch {
		case strings.TrimSpace(line) == "" || strings.HasSuffix(line, ":"):
			flush()
		case hasArrow:
			if arrow {
				flush()
			}
			left = append(left, list(l)...)
			right, arrow = list(r), true
		case arrow && strings.HasPrefix(line, " "):
			right = append(right, list(line)...)
		default:
			if arrow {
				flush()
			}
			left = append(left, list(line)...)
		}
	}
	flush()
	return out
}

// packageDirs returns the directories, relative to the module root, of the
// packages with code that ships or that tests import (testdata left out).
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel("..", filepath.Dir(path))
		if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}
