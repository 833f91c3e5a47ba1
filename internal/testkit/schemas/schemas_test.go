package schemas

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/results"
)

var update = flag.Bool("update", false, "rewrite the generated schemas in schema/")

const schemaDir = "../../../schema"

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
	root := "../../analysis/testdata/plan-small"
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

// TestPlanFiles: every example plan, the canonical plans the plan tests
// keep, the default plan as written into results and the plans of the
// analysis fixtures (written before the schema key) validate against the
// plan file's schema; the parser takes each of them too. Plans the parser
// refuses for a value's type are refused by the schema as well.
func TestPlanFiles(t *testing.T) {
	c := validator.NewCompiler()
	b, err := os.ReadFile(filepath.Join(schemaDir, PlanFileSchema))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(BaseURL+PlanFileSchema, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(BaseURL + PlanFileSchema)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, data []byte) error {
		js, err := PlanYAMLToJSON(data)
		if err != nil {
			return err
		}
		v, err := validator.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			return err
		}
		return sch.Validate(v)
	}
	files, _ := filepath.Glob("../../../examples/*.yaml")
	more, _ := filepath.Glob("../../bench/plan/testdata/*.canonical.yaml")
	files = append(append(files, more...), "../../bench/plan/testdata/defaults.golden.yaml",
		"../../analysis/testdata/plan-small/plan.yaml", "../../analysis/testdata/plan-invalid/plan.yaml")
	if len(files) < 10 {
		t.Fatalf("only %d plan files found: %v", len(files), files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Parse(f, data)
		if err != nil {
			t.Errorf("%s: the parser refuses it: %v", f, err)
			continue
		}
		if err := check(f, data); err != nil {
			t.Errorf("%s against %s: %v", f, PlanFileSchema, err)
		}
		// What meshbench writes back (plan.yaml of the results).
		if err := check(f, p.YAML()); err != nil {
			t.Errorf("%s written back, against %s: %v\n%s", f, PlanFileSchema, err, p.YAML())
		}
	}
	if err := check("empty", nil); err != nil {
		t.Errorf("an empty plan (the defaults): %v", err)
	}
	for _, tc := range []struct{ name, yaml string }{
		{"unknown key", "durtion: 5s\n"},                      // a typo
		{"unknown axis", "axes:\n  rates: [20]\n"},            // a typo under axes
		{"other version", "schema: meshbench.plan-file/v2\n"}, // a later format
		{"duration without unit", "duration: 5\n"},            // time.ParseDuration needs a unit
		{"percent", "thresholds:\n  errors: 10%\n"},           // a fraction, not a percentage
		{"mesh", "axes:\n  mesh: [istio]\n"},                  // not a mode
		{"rate", "axes:\n  rate: [-5]\n"},                     // not positive
		{"platform", "platform: kubernetes\n"},                // kube
	} {
		if _, err := plan.Parse("p.yaml", []byte(tc.yaml)); err == nil {
			t.Errorf("%s: the parser takes %q", tc.name, tc.yaml)
		}
		if err := check(tc.name, []byte(tc.yaml)); err == nil {
			t.Errorf("%s: the schema takes %q", tc.name, tc.yaml)
		}
	}
}

// TestResourcesClusterForms: the cluster's forms of resources.json (the
// lab's are validated by the lab's tests) match the schema generated from
// sample.Resources: measured by metrics.k8s.io, and by the kubelet's
// counters without a measured window (counters, metrics_api and nodes
// null). A key of the wrong type is refused, named.
func TestResourcesClusterForms(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	drain := results.Drain{Ended: results.DrainIdle, LoadEnded: at}
	sum := sample.Summarize([]sample.Round{{Time: at, Samples: []sample.Sample{{Target: sample.Target{PID: 1, Name: "a/b/c",
		Component: "app", Category: sample.CategoryApp}, Time: at, CPUMillicores: 5}}}})
	n := 0
	forms := map[string]sample.Resources{
		"metrics-api": {Schema: results.ResourcesSchema, Source: "metrics-api", Memory: "working set", Drain: &drain, Summary: sum,
			Window: sample.ResourcesWindow{From: at, To: at.Add(time.Second), Rule: "r"}, Stale: &sample.StaleSamples{}, MixedRounds: &n, APIErrors: &n,
			Nodes: sample.Write([]sample.NodeSummary{{Name: "node-1", Rounds: 1}})},
		"kubelet": {Schema: results.ResourcesSchema, Source: "kubelet", Memory: "working set", Drain: &drain, Summary: sample.Summarize(nil),
			Window: sample.ResourcesWindow{Rule: "r"}, Nodes: sample.Write[[]sample.NodeSummary](nil),
			Counters: sample.Write[*sample.CounterReport](nil), MetricsAPI: sample.Write[*sample.MetricsAPIReport](nil)},
	}
	root := t.TempDir()
	for name, r := range forms {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, results.ResourcesFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := ValidateTree(root, schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(v.BySchema["resources.v1.schema.json"]); got != len(forms) {
		t.Errorf("%d resources files validated, want %d", got, len(forms))
	}
	p := filepath.Join(root, "kubelet", results.ResourcesFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.Replace(b, []byte(`"counters": null`), []byte(`"counters": "none"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ValidateTree(root, schemaDir); err == nil || !strings.Contains(err.Error(), "kubelet/resources.json against resources.v1.schema.json") {
		t.Errorf("counters of the wrong type: %v", err)
	}
}
