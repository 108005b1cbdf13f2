package generator

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportDirection enforces the one direction of imports written in the
// README: cmd/agentbox -> generator -> (firewall, images, templates), with
// internal/ helpers usable by all and importing none of them; and no code
// that ships imports internal/testing/, the test-only packages.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/agentbox-dev/agentbox/"
	forbidden := map[string][]string{
		"cmd/*":              {"internal/testing/"},
		"generator":          {"cmd/", "internal/testing/"},
		"firewall":           {"cmd/", "generator", "images", "templates", "internal/testing/"},
		"images":             {"cmd/", "generator", "firewall", "templates", "internal/testing/"},
		"templates":          {"cmd/", "generator", "firewall", "images", "internal/"},
		"internal/*":         {"cmd/", "generator", "firewall", "images", "templates", "internal/testing/"},
		"internal/testing/*": {"cmd/", "generator", "firewall", "images", "templates"},
	}
	for pkg, bad := range forbidden {
		dirs, _ := filepath.Glob(filepath.Join("..", pkg))
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
					for _, b := range bad {
						if strings.HasPrefix(path, mod+b) {
							t.Errorf("%s imports %s, against the import direction", file, path)
						}
					}
				}
			}
		}
	}
	if _, err := os.Stat("../internal/testing/golden"); err != nil {
		t.Fatal("run from the generator directory")
	}
}
