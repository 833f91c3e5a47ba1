package local

import (
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sample"
)

// derive computes the figures `meshbench run` prints below the tables:
// data-plane CPU per 1000 achieved requests per second, data-plane memory
// per replica, and the mesh / app ratios. Keys carry their units.
func derive(t *mesh.Topology, r *results.LoadResult, s sample.Summary) map[string]float64 {
	out := map[string]float64{}
	if r == nil {
		return out
	}
	rate := r.AchievedRatePerSec()
	out["achieved_rate_per_sec"] = rate
	dp, app := s.Category(sample.CategoryDataPlane), s.Category(sample.CategoryApp)
	replicas := float64(len(t.ServerPods())) // app pods, all services
	if dp != nil {
		out["data_plane_cpu_millicores_avg"] = dp.CPUMillicores.Avg
		if rate > 0 {
			out["data_plane_cpu_millicores_per_1000_rps"] = dp.CPUMillicores.Avg / rate * 1000
		}
		// PSS is not read every round: no reading in the window, no figure.
		if dp.PSSRounds > 0 {
			out["data_plane_pss_mib_avg"] = dp.PSSBytes.Avg / (1 << 20)
			out["data_plane_pss_mib_per_replica"] = dp.PSSBytes.Avg / (1 << 20) / replicas
			if dp.Processes > 0 {
				out["data_plane_pss_mib_per_proxy"] = dp.PSSBytes.Avg / (1 << 20) / float64(dp.Processes)
			}
		}
	}
	if app != nil && dp != nil {
		if app.CPUMillicores.Avg > 0 {
			out["data_plane_to_app_cpu_ratio"] = dp.CPUMillicores.Avg / app.CPUMillicores.Avg
		}
		if app.PSSBytes.Avg > 0 && dp.PSSRounds > 0 {
			out["data_plane_to_app_memory_ratio"] = dp.PSSBytes.Avg / app.PSSBytes.Avg
		}
	}
	return out
}
