package local

import (
	"maps"
	"strings"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
)

// derive computes the figures `meshbench run` prints below the tables:
// the achieved rate, the data plane's average CPU and PSS and PSS per
// proxy, and the data-plane figures analysis shows too
// (sample.DataPlaneFigures: per 1000 achieved rps, per replica, the mesh /
// app ratios), under the same keys. Keys carry their units.
func derive(t *topology.Topology, r *results.LoadResult, s sample.Summary) map[string]float64 {
	out := map[string]float64{}
	if r == nil {
		return out
	}
	rate := r.AchievedRatePerSec()
	out["achieved_rate_per_sec"] = rate
	dp := s.Category(sample.CategoryDataPlane)
	if dp != nil {
		out["data_plane_cpu_millicores_avg"] = dp.CPUMillicores.Avg
		// PSS is not read every round: no reading in the window, no figure.
		if dp.PSSRounds > 0 {
			out["data_plane_pss_mib_avg"] = dp.PSSBytes.Avg / (1 << 20)
			if n := proxies(s, dp.Processes); n > 0 {
				out["data_plane_pss_mib_per_proxy"] = dp.PSSBytes.Avg / (1 << 20) / float64(n)
			}
		}
	}
	maps.Copy(out, sample.DataPlaneFigures(s, rate, len(t.ServerPods()))) // app pods, all services
	return out
}

// AgentSuffix ends the sampled name of a proxy's agent (Istio's
// pilot-agent beside the Envoy it starts): in the data plane with its
// proxy, as on a cluster both are the sidecar container, but no proxy of
// its own.
const AgentSuffix = " pilot-agent"

// proxies is the data plane's processes less the proxies' agents.
func proxies(s sample.Summary, processes int) int {
	for _, p := range s.Processes {
		if p.Category == sample.CategoryDataPlane && strings.HasSuffix(p.Name, AgentSuffix) {
			processes--
		}
	}
	return processes
}
