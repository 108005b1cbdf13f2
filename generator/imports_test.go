package generator

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportDirection enforces the one direction of imports written in the
// README: cmd/agentbox -> generator -> (firewall, images, catalog,
// templates), with internal/ helpers usable by all and importing none of
// them; catalog imports nothing from the project but internal/validate; and
// no code that ships imports internal/testing/, the test-only packages.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/agentbox-dev/agentbox/"
	domain := []string{"cmd/", "generator", "firewall", "images", "catalog", "templates"}
	forbidden := map[string][]string{
		"cmd/*":              {"internal/testing/"},
		"generator":          {"cmd/", "internal/testing/"},
		"firewall":           {"cmd/", "generator", "images", "catalog", "templates", "internal/testing/"},
		"images":             {"cmd/", "generator", "firewall", "catalog", "templates", "internal/testing/"},
		"templates":          {"cmd/", "generator", "firewall", "images", "catalog", "internal/"},
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
