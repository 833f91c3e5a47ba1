package local

import (
	"testing"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// TestProxies: a proxy's agent (Istio's pilot-agent) is sampled in the
// data plane with its proxy but is not counted as a proxy of its own;
// other categories do not count.
func TestProxies(t *testing.T) {
	ps := func(name, cat string) sample.ProcessSummary {
		return sample.ProcessSummary{Target: sample.Target{PID: 1, Name: name, Component: name, Category: cat}}
	}
	s := sample.Summary{Processes: []sample.ProcessSummary{
		ps("client-sidecar", sample.CategoryDataPlane), ps("client-sidecar"+AgentSuffix, sample.CategoryDataPlane),
		ps("server-0-sidecar", sample.CategoryDataPlane), ps("server-0-sidecar"+AgentSuffix, sample.CategoryDataPlane),
		ps("istiod", sample.CategoryControlPlane), ps("load", sample.CategoryLoad),
	}}
	if got := proxies(s, 4); got != 2 {
		t.Errorf("proxies = %d, want the 2 sidecars", got)
	}
	if got := proxies(sample.Summary{Processes: s.Processes[:1]}, 1); got != 1 {
		t.Errorf("proxies without agents = %d, want 1", got)
	}
}
