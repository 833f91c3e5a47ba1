package plan

import "github.com/meshbench/meshbench/internal/analysis"

// MethodSettings reads the settings of a plan file (name labels it in
// errors) that a comparison of two result sets names when they differ
// (analysis.Plan.Settings); nil when the file cannot be parsed.
func MethodSettings(name string, data []byte) *analysis.PlanSettings {
	p, err := Parse(name, data)
	if err != nil {
		return nil
	}
	return &analysis.PlanSettings{
		Duration: p.Duration, Warmup: p.Warmup, Drain: p.Drain, SampleInterval: p.SampleInterval,
		Connections: p.Connections, Nodes: p.Nodes, ReuseTopology: p.ReuseTopology, SendTick: p.SendTick,
	}
}
