package capacity

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/meshbench/meshbench/internal/analysis/slo"
	"github.com/meshbench/meshbench/internal/results"
)

// LoadSearchSchema names the format of `meshbench load --slo -o FILE`.
const LoadSearchSchema = "meshbench.capacity-search/v1"

// LoadSearch is a whole search against one endpoint, as `meshbench load
// --slo` writes it: the objective, the search, every probe with its full
// load result, and how the search ended.
type LoadSearch struct {
	Schema           string   `json:"schema"`
	MeshbenchVersion string   `json:"meshbench_version"`
	Targets          []string `json:"targets"`
	// Objective is in slo.Parse's syntax.
	Objective   string     `json:"objective"`
	Search      Config     `json:"search"`
	Probes      []ProbeRun `json:"probes"`
	Result      *Result    `json:"result,omitempty"` // nil when interrupted
	Interrupted bool       `json:"interrupted"`
}

// ProbeRun is one probe: its rate, the verdict, the generator's CPU and
// the load result.
type ProbeRun struct {
	Index   int         `json:"index"` // 1-based
	Probe   Probe       `json:"probe"`
	Outcome slo.Outcome `json:"outcome"`
	// LoadCPU is the generator's average CPU over the probe (warm-up
	// included), as a fraction of one core.
	LoadCPU float64             `json:"load_cpu"`
	Load    *results.LoadResult `json:"load"`
}

// ProbeOf turns a verdict into the search's probe.
func ProbeOf(rate float64, o slo.Outcome) Probe {
	p := Probe{RatePerSec: rate, Met: o.Met, GeneratorLimit: o.GeneratorLimit}
	if o.GeneratorLimit && len(o.Reasons) > 0 {
		p.Reason = o.Reasons[0]
	}
	return p
}

// Write encodes s as indented JSON.
func (s *LoadSearch) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// ReadLoadSearch reads a file written by LoadSearch.Write.
func ReadLoadSearch(path string) (*LoadSearch, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s LoadSearch
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Schema != LoadSearchSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, s.Schema, LoadSearchSchema)
	}
	return &s, nil
}
