package wire_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefinedOnce fails when a package that speaks the API (the server,
// the Go client, the console, primectl, the starter, eval) defines a type
// that package wire defines: the body of a route is defined once. Names are
// compared without case in the server and client, so an unexported copy
// (poolSpec) counts too.
// Aliases (type X = wire.X) are not definitions and pass.
func TestDefinedOnce(t *testing.T) {
	ours := typeNames(t, ".")
	if len(ours) < 40 {
		t.Fatalf("wire defines %d types; the parse went wrong", len(ours))
	}
	for _, dir := range []string{"../api", "../api/client", "../console", "../cli", "../starter", "../eval"} {
		// The console's and primectl's own view types (a signed-in
		// session, a table row) may share a name's letters, not its case.
		exact := dir == "../console" || dir == "../cli"
		for name, at := range typeNames(t, dir) {
			if wireName, ok := ours[strings.ToLower(name)]; ok && (!exact || wireName == name) {
				t.Errorf("%s defines %s, which package wire defines: use wire.%s", at, name, wireName)
			}
		}
	}
}

// typeNames maps the lower-cased name of every type defined (not aliased)
// in dir's non-test files to its name and position.
func typeNames(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]string{}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if ts.Assign.IsValid() {
					continue
				}
				if dir == "." {
					out[strings.ToLower(ts.Name.Name)] = ts.Name.Name
				} else {
					out[ts.Name.Name] = fset.Position(ts.Pos()).String()
				}
			}
		}
	}
	return out
}
