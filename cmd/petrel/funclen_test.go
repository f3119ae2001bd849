package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is how long a function may be (from func to its closing
// brace) without its doc comment saying why it is "longer than a screen".
const maxFuncLines = 110

// TestFunctionsFitOnAScreen checks that no function outside tests and the
// synthetic web's generators (internal/testweb) is longer than
// maxFuncLines, unless its doc comment says why ("longer than a screen").
func TestFunctionsFitOnAScreen(t *testing.T) {
	for _, root := range []string{"../../cmd", "../../internal"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testweb" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n > maxFuncLines && !strings.Contains(strings.Join(strings.Fields(fd.Doc.Text()), " "), "longer than a screen") {
					t.Errorf("%s: %s is %d lines: split it, or say in its doc comment why it is longer than a screen", fset.Position(fd.Pos()), fd.Name.Name, n)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
