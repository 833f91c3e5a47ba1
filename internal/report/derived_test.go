package report

import (
	"bytes"
	"testing"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestDerivedTable pins run's derived figures: key order, two decimals,
// and nothing at all without figures.
func TestDerivedTable(t *testing.T) {
	var b bytes.Buffer
	DerivedTable(&b, map[string]float64{
		"data_plane_cpu_millicores_per_1000_rps": 412.345, // sorted after the ratio below
		"data_plane_app_cpu_ratio":               2.6449,  // rounded to two decimals
		"data_plane_pss_bytes_per_replica":       19922944,
	})
	testutil.Golden(t, "derived.txt.golden", b.Bytes())
	b.Reset()
	DerivedTable(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no figures printed %q; want nothing", b.String())
	}
}
