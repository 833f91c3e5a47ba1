package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestFind: the top-level tests that call testutil.Timing are found by
// package, sorted; a call from a helper or a method is an error naming
// it; files without a call add nothing.
func TestFind(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/a_test.go", `package a
func TestZ(t *testing.T) { testutil.Timing(t); check() }
func TestA(t *testing.T) { lag := testutil.Timing(t); _ = lag }
func TestPlain(t *testing.T) {}
`)
	write("a/b_test.go", `package a
func TestB(t *testing.T) { p := knownP99(t, testutil.Timing(t)); _ = p }
`)
	write("b/b_test.go", `package b
func TestNone(t *testing.T) {}
`)
	write("c/c_test.go", `package c
func helper(t *testing.T) { testutil.Timing(t) }
func (s suite) TestM(t *testing.T) { testutil.Timing(t) }
`)
	write("testutil/timing.go", `package testutil
func Timing(t testing.TB) Lag { return MeasureTimerLag(t) }
`)
	found, errs := find([]string{root})
	want := map[string][]string{filepath.Join(root, "a"): {"TestA", "TestB", "TestZ"}}
	if !reflect.DeepEqual(found, want) {
		t.Errorf("found %v, want %v", found, want)
	}
	if len(errs) != 2 || !strings.Contains(errs[0], "c_test.go:2:") || !strings.Contains(errs[0], "in helper") ||
		!strings.Contains(errs[1], "c_test.go:3:") || !strings.Contains(errs[1], "in TestM") {
		t.Errorf("errors %q, want the helper's and the method's calls named", errs)
	}
}

// TestFindTree: this repository's timing lane is not empty, and every
// call is where the lane finds it.
func TestFindTree(t *testing.T) {
	found, errs := find([]string{"../../cmd", "../../internal"})
	if len(errs) > 0 {
		t.Errorf("problems: %q", errs)
	}
	if len(found["../../internal/cli"]) == 0 {
		t.Errorf("no timing test found in internal/cli: %v", found)
	}
}
