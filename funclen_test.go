// Package agentbox holds the tests that keep rules over the whole
// repository; it has no code of its own.
package agentbox

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function may take, from its func
// keyword to its closing brace: about a screen (STYLE.md).
const maxFuncLines = 60

// longFuncs are the functions still over maxFuncLines, each named
// file:function (file:Receiver.method for a method). It is empty: none may
// join it.
var longFuncs = []string{}

// funcSkipDirs are the directories, relative to the module root, whose code
// is test code: the end-to-end tests and the test-only packages.
var funcSkipDirs = []string{"internal/e2e", "internal/testing"}

// TestFunctionLength fails for each function over maxFuncLines lines in
// the repository's non-test Go files (testdata, internal/e2e and
// internal/testing left out) that longFuncs does not list, and for each
// entry of longFuncs that no longer names such a function.
func TestFunctionLength(t *testing.T) {
	long := map[string]int{}
	for _, file := range shippedGoFiles(t) {
		for _, f := range fileFuncs(t, file) {
			if f.lines > maxFuncLines {
				long[f.name] = f.lines
			}
		}
	}
	for name, n := range long {
		if !slices.Contains(longFuncs, name) {
			t.Errorf("%s is %d lines, over %d: split it into named steps (STYLE.md)", name, n, maxFuncLines)
		}
	}
	for _, name := range longFuncs {
		if _, ok := long[name]; !ok {
			t.Errorf("%s is listed in longFuncs but is no longer a function over %d lines: remove it from the list", name, maxFuncLines)
		}
	}
}

// TestFuncLines checks the measure on a file of known functions: lines
// from func to the closing brace, methods named by their receiver's type,
// and the function literals of package variables counted too.
func TestFuncLines(t *testing.T) {
	src := `package p

// one is one line.
func one() {}

func (r *recv[T]) three() {
	_ = r
}

var (
	a, b = func() {
	}, 0
	c int
)
`
	file := filepath.Join(t.TempDir(), "p.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(fileFuncs(t, file))
	want := fmt.Sprintf("[{%[1]s:one 1} {%[1]s:recv.three 3} {%[1]s:a 2}]", filepath.ToSlash(file))
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// funcLen is a function and its length in lines.
type funcLen struct {
	name  string // file:function
	lines int
}

// fileFuncs returns the functions of a Go file: its function declarations
// and the function literals of its package variables.
func fileFuncs(t *testing.T, file string) []funcLen {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	lines := func(n ast.Node) int { return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1 }
	prefix := filepath.ToSlash(file) + ":"
	var out []funcLen
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Body != nil {
				out = append(out, funcLen{prefix + funcName(d), lines(d)})
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, v := range vs.Values {
					ast.Inspect(v, func(n ast.Node) bool {
						lit, ok := n.(*ast.FuncLit)
						if ok && i < len(vs.Names) {
							out = append(out, funcLen{prefix + vs.Names[i].Name, lines(lit)})
						}
						return !ok
					})
				}
			}
		}
	}
	return out
}

// funcName is a function's name, or Receiver.method for a method.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	typ := d.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + d.Name.Name
	}
	return d.Name.Name
}

// shippedGoFiles returns the paths, relative to the module root, of the
// non-test Go files outside testdata, funcSkipDirs, hidden directories and
// other modules.
func shippedGoFiles(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat("go.mod"); err != nil {
		t.Fatal("run from the module root")
	}
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && skipDir(path) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found")
	}
	return files
}

// skipDir reports whether the directory at path (relative to the module
// root) holds no code that shippedGoFiles measures.
func skipDir(path string) bool {
	name := filepath.Base(path)
	if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	if slices.Contains(funcSkipDirs, filepath.ToSlash(path)) {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod")) // another module
	return err == nil
}
