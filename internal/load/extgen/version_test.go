package extgen

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestBuiltVersion reads real binaries' build info: this test binary (a Go
// binary of meshbench's module) and a binary that is not Go.
func TestBuiltVersion(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	meshbench := func(path, _ string) bool { return strings.HasPrefix(path, "github.com/meshbench/meshbench") }
	for _, tt := range []struct {
		name  string
		bin   string
		match func(path, version string) bool
		ok    bool
	}{
		{"a Go binary of the module", self, meshbench, true},
		{"a Go binary of another module", self, func(path, _ string) bool { return path == FortioModule }, false},
		// Fortio's rule: a build without a version ("(devel)") asks the tool.
		{"the module without a stamped version", self, func(path, v string) bool { return meshbench(path, v) && v != "(devel)" && v != "" }, false},
		{"not a Go binary", "/bin/sh", meshbench, false},
		{"no such file", "/nonexistent/tool", meshbench, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := builtVersion(tt.bin, tt.match)
			if ok != tt.ok || (ok && strings.HasPrefix(v, "v")) {
				t.Errorf("builtVersion(%s) = %q, %v; want ok %v and no leading v", tt.bin, v, ok, tt.ok)
			}
		})
	}
}

// TestRunVersion runs a real command and returns stdout and stderr.
func TestRunVersion(t *testing.T) {
	b, err := runVersion(context.Background(), "/bin/sh", "-c", "echo 1.2.3; echo usage >&2")
	if err != nil || string(b) != "1.2.3\nusage\n" {
		t.Errorf("runVersion: %q, %v", b, err)
	}
	if _, err := runVersion(context.Background(), "/nonexistent/tool", "--version"); err == nil {
		t.Error("runVersion of a missing binary: no error")
	}
}
