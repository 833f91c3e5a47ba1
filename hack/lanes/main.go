// Command lanes finds the timing lane's tests: every top-level Test
// function of a _test.go file under cmd/ and internal/ that calls
// testutil.Timing (docs/testing.md). It prints one line per package, in
// the order of their paths: the package's directory and a -run pattern
// naming its tests exactly,
//
//	./internal/cli ^(TestCoordinatedOmission|TestLoadRateAccuracy)$
//
// A call anywhere else (a helper, a method, a non-test file) is an error,
// since the lane would never run that test: lanes names each such call
// and exits 1. Run from the module's root: go run ./hack/lanes.
package main

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
)

func main() {
	found, errs := find([]string{"cmd", "internal"})
	for _, e := range errs {
		fmt.Fprintln(os.Stderr, "lanes: "+e)
	}
	if len(errs) > 0 {
		os.Exit(1)
	}
	dirs := make([]string, 0, len(found))
	for d := range found {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		fmt.Printf("./%s ^(%s)$\n", d, strings.Join(found[d], "|"))
	}
}

// find walks roots and returns, by package directory, the sorted names of
// the top-level tests that call testutil.Timing, and one problem per call
// made anywhere else.
func find(roots []string) (map[string][]string, []string) {
	found := map[string][]string{}
	var errs []string
	fset := token.NewFileSet()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			inTestutil := f.Name.Name == "testutil"
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				calls := timingCalls(fn.Body, inTestutil)
				if len(calls) == 0 {
					continue
				}
				if fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && strings.HasSuffix(path, "_test.go") {
					dir := filepath.Dir(path)
					found[dir] = append(found[dir], fn.Name.Name)
					continue
				}
				for _, pos := range calls {
					errs = append(errs, fmt.Sprintf("%s: testutil.Timing called in %s: call it first thing in the top-level test, where the timing lane finds it",
						fset.Position(pos), fn.Name.Name))
				}
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, names := range found {
		slices.Sort(names)
	}
	return found, errs
}

// timingCalls returns the positions of the calls to testutil.Timing in
// body (to Timing itself inside package testutil).
func timingCalls(body *ast.BlockStmt, inTestutil bool) []token.Pos {
	var pos []token.Pos
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr:
			if x, ok := fun.X.(*ast.Ident); ok && x.Name == "testutil" && fun.Sel.Name == "Timing" {
				pos = append(pos, call.Pos())
			}
		case *ast.Ident:
			if inTestutil && fun.Name == "Timing" {
				pos = append(pos, call.Pos())
			}
		}
		return true
	})
	return pos
}
