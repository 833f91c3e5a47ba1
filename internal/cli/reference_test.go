package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReferenceFresh: docs/reference is what the commands generate now;
// a command, flag or help text changed without `go run ./hack/reference`
// fails here, naming the pages that differ.
func TestReferenceFresh(t *testing.T) {
	dir := t.TempDir()
	if err := WriteReference(dir); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join("..", "..", ReferenceDir)
	want, _ := filepath.Glob(filepath.Join(dir, "meshbench*.md"))
	have, _ := filepath.Glob(filepath.Join(repo, "meshbench*.md"))
	names := func(fs []string) []string {
		var out []string
		for _, f := range fs {
			out = append(out, filepath.Base(f))
		}
		return out
	}
	if !slices.Equal(names(want), names(have)) {
		t.Errorf("%s has pages %v, the commands make %v: run go run ./hack/reference", ReferenceDir, names(have), names(want))
	}
	for _, f := range want {
		got, err := os.ReadFile(filepath.Join(repo, filepath.Base(f)))
		if err != nil {
			continue // said above
		}
		gen, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(gen) {
			t.Errorf("%s/%s is stale: run go run ./hack/reference", ReferenceDir, filepath.Base(f))
		}
	}
	// Every command users see has a page.
	for _, c := range ReferenceCommands() {
		if !slices.Contains(names(want), ReferencePage(c[0])) {
			t.Errorf("no page for %s", c[0])
		}
	}
}
