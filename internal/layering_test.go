package internal_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/meshbench/meshbench/"

// layers are the project's packages from the top down, by path prefix
// (the longest prefix names a package's layer). A package may import
// packages of its own layer and of the layers below it, never one above:
// that is what "imports flow downward" means, checked here for every
// non-test file (build tags ignored, so every platform's files count).
// Most layers are whole rooms; a few rooms are split where their
// packages sit at different heights (docs/architecture.md says why):
// bench's runner and plan below bench itself, the pure arithmetic of
// analysis below analysis, and load's extgen, which writes results,
// above results, which stores loadgen's and latency's types; and
// platform/fault below the platforms that hand it their processes.
var layers = [][]string{
	{"cmd", "hack", "internal/e2e", "internal/testkit"}, // tests and their tools, the binary's main
	{"internal/cli"},
	{"internal/bench"},
	{"internal/bench/runner"},
	{"internal/bench/plan"},
	{"internal/platform"},
	{"internal/platform/fault"}, // the fault scheduler: below every platform, above the meshes it hits
	{"internal/report"},
	{"internal/analysis", "internal/analysis/threshold"},
	{"internal/analysis/capacity", "internal/analysis/slo", "internal/analysis/stats"},
	{"internal/mesh"},
	{"internal/measure"},
	{"internal/load/extgen"},
	{"internal/results"},
	{"internal/load"},
	{"internal/workload"},
	{"internal/sys"},
}

// onlyIn are imports allowed only under the given prefixes.
var onlyIn = map[string][]string{
	"github.com/spf13/cobra": {"internal/cli"},
	"k8s.io/client-go":       {"internal/platform/kube", "internal/testkit", "internal/e2e", "hack"},
}

// layerOf is pkg's layer (0 is the top) and the prefix that placed it.
func layerOf(pkg string) (int, string) {
	best, bestPrefix := -1, ""
	for i, l := range layers {
		for _, p := range l {
			if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > len(bestPrefix) {
				best, bestPrefix = i, p
			}
		}
	}
	return best, bestPrefix
}

// imports lists, per package directory under root (module-relative), the
// module-relative and external paths its non-test files import.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, top := range []string{"cmd", "hack", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			rel = filepath.ToSlash(rel)
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !slices.Contains(out[rel], p) {
					out[rel] = append(out[rel], p)
				}
			}
			if _, ok := out[rel]; !ok {
				out[rel] = nil
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestLayering: no package imports one above it, every package has a
// layer (a new room or package is placed in layers above, on purpose),
// cobra only in cli and client-go only under platform/kube.
func TestLayering(t *testing.T) {
	for pkg, imps := range imports(t, "..") {
		l, _ := layerOf(pkg)
		if l < 0 {
			t.Errorf("%s has no layer: add it to layers in internal/layering_test.go (and to docs/architecture.md)", pkg)
			continue
		}
		for _, imp := range imps {
			for ext, allowed := range onlyIn {
				if imp != ext && !strings.HasPrefix(imp, ext+"/") {
					continue
				}
				if !slices.ContainsFunc(allowed, func(a string) bool { return pkg == a || strings.HasPrefix(pkg, a+"/") }) {
					t.Errorf("%s imports %s: only %s may", pkg, imp, strings.Join(allowed, ", "))
				}
			}
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			dl, dp := layerOf(dep)
			if dl >= 0 && dl < l {
				_, pp := layerOf(pkg)
				t.Errorf("%s (layer %q) imports %s (layer %q, above it): imports flow downward only", pkg, pp, dep, dp)
			}
		}
	}
}
