package capacity

import (
	"bytes"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestLoadSearchMatchesSchema writes a search (a recorded real one, from
// `meshbench load --slo` against `serve --concurrency 4 --service-time 2ms`)
// back through LoadSearch and validates it against its JSON Schema.
func TestLoadSearchMatchesSchema(t *testing.T) {
	s, err := ReadLoadSearch("testdata/search.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Result == nil || s.Result.Kind != Found || len(s.Probes) != s.Result.Probes {
		t.Fatalf("fixture: %+v", s.Result)
	}
	var buf bytes.Buffer
	if err := s.Write(&buf); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	// The probes' load results refer to the load result's schema by its $id.
	lf, err := os.Open("../../../schema/load-result.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	ld, err := jsonschema.UnmarshalJSON(lf)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("https://meshbench.dev/schema/load-result.v1.schema.json", ld); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("../../../schema/capacity-search.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("does not match its schema: %v", err)
	}
	// A wrong schema name is refused.
	bad := bytes.Replace(buf.Bytes(), []byte(LoadSearchSchema), []byte("meshbench.capacity-search/v0"), 1)
	p := t.TempDir() + "/bad.json"
	_ = os.WriteFile(p, bad, 0o644)
	if _, err := ReadLoadSearch(p); err == nil {
		t.Error("schema v0 accepted")
	}
}
