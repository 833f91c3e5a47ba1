package schemas

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated schemas in schema/")

const schemaDir = "../../schema"

// TestGeneratedUpToDate: every generated schema in schema/ is what the Go
// types give now; a changed type must come with its schema (and, for a
// change of meaning, a new version). go test -update rewrites them.
func TestGeneratedUpToDate(t *testing.T) {
	gen, err := Generated()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range gen {
		p := filepath.Join(schemaDir, name)
		if *update {
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what the Go types generate (run go test ./internal/schemas -update after checking the change): %v", p, err)
		}
	}
}

// TestEverySchemaCompiles: every format's schema exists and compiles, and
// a versioned format's schema holds its files to the version.
func TestEverySchemaCompiles(t *testing.T) {
	if _, err := ValidateTree(t.TempDir(), schemaDir); err != nil {
		t.Fatal(err)
	}
}

// TestValidateTreeFixtures: the analysis fixtures (cells written by real
// runs of an earlier version: manifest, load result, resources) match
// their schemas; a file changed against its schema is named.
func TestValidateTreeFixtures(t *testing.T) {
	root := "../analysis/testdata/plan-small"
	v, err := ValidateTree(root, schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"run-manifest.v1.schema.json", "plan-manifest.v1.schema.json", "load-result.v1.schema.json", "resources.v1.schema.json"} {
		if len(v.BySchema[s]) == 0 {
			t.Errorf("no fixture file validated against %s: %v", s, v.BySchema)
		}
	}
	// A manifest with a key its type does not have fails, named.
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(root, "plan-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"seed"`), []byte(`"sed": 1, "seed"`), 1)
	if err := os.WriteFile(filepath.Join(dir, "plan-manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ValidateTree(dir, schemaDir); err == nil || !bytes.Contains([]byte(err.Error()), []byte("plan-manifest.json against plan-manifest.v1.schema.json")) {
		t.Errorf("an unknown key in a plan manifest: %v", err)
	}
}
