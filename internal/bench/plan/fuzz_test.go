package plan

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics, returns a plan or an error (not both),
// and every plan it accepts stays within MaxCells and survives the trip
// through its canonical YAML unchanged.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, path := range append(seeds, more...) {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"", "{}", "axes: {mesh: [none, sidecar], policies: [0, 4]}",
		"a: &x [1, 2]\naxes: {rate: *x}", "axes:\n  rate: max\n  mtls: [false]\n  mesh: [sidecar]\nbaseline: sidecar\n",
		"- 1", "seed: 9223372036854775808", "axes: {replicas: [1, 1]}", "duration: 1h\n---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if (p == nil) == (err == nil) {
			t.Fatalf("Parse returned plan %v and error %v", p, err)
		}
		if err != nil {
			return
		}
		cells := p.Cells()
		if len(cells) == 0 || len(cells) > MaxCells {
			t.Fatalf("%d cells", len(cells))
		}
		q, err := Parse("canonical.yaml", p.YAML())
		if err != nil {
			t.Fatalf("canonical YAML rejected: %v\n%s", err, p.YAML())
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, q)
		}
	})
}
