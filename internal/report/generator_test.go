package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLoadTextGenerators: results measured by an external generator
// (`meshbench load --generator`, here with internal/load/extgen's stand-ins
// printing oha's recorded and wrk2's documented output) name the tool in
// the headline, print "unknown" for what it does not report, and end with
// how the histograms were obtained and the tool's notes.
func TestLoadTextGenerators(t *testing.T) {
	for _, name := range []string{"oha", "wrk2"} {
		r, err := results.ReadFile(filepath.Join("testdata", "result-"+name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := LoadText(&buf, r); err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, "text_"+name+".golden", buf.Bytes())
	}
}
