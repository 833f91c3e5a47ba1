package sample

// Keys of the data-plane figures DataPlaneFigures derives, one spelling
// for every place that shows them (`meshbench run`'s "Derived:", the
// manifest's derived map, analysis' figures). CPU in millicores, memory in
// MiB (PSS on the local lab, the working set on a cluster), rates per
// second.
const (
	DataPlaneCPUPer1000 = "data_plane_cpu_m_per_1000rps"   // data-plane CPU per 1000 achieved rps
	DataPlaneMemPer1000 = "data_plane_mem_mib_per_1000rps" // data-plane memory per 1000 achieved rps
	DataPlaneMemPerPod  = "data_plane_mem_mib_per_replica" // data-plane memory per app pod
	DataPlaneCPUToApp   = "data_plane_to_app_cpu_ratio"    // data-plane CPU / app CPU
	DataPlaneMemToApp   = "data_plane_to_app_mem_ratio"    // data-plane memory / app memory
)

// DataPlaneFigures derives the data plane's cost from a cell's summary, its
// achieved rate (requests per second) and its number of app pods: CPU and
// memory per 1000 achieved rps, memory per app pod, and the data plane /
// app ratios. A figure whose inputs are missing (no data plane in mode
// none, no memory reading, no rate) is absent, not zero.
func DataPlaneFigures(s Summary, achievedRatePerSec float64, appPods int) map[string]float64 {
	const mib = 1 << 20
	out := map[string]float64{}
	dp, app := s.Category(CategoryDataPlane), s.Category(CategoryApp)
	if dp == nil {
		return out
	}
	dpCPU := dp.CPUMillicores.Avg
	if achievedRatePerSec > 0 {
		out[DataPlaneCPUPer1000] = dpCPU / achievedRatePerSec * 1000
	}
	if app != nil && app.CPUMillicores.Avg > 0 {
		out[DataPlaneCPUToApp] = dpCPU / app.CPUMillicores.Avg
	}
	if dp.PSSRounds == 0 { // memory not read in the window: no memory figure
		return out
	}
	mem := dp.PSSBytes.Avg / mib
	if achievedRatePerSec > 0 {
		out[DataPlaneMemPer1000] = mem / achievedRatePerSec * 1000
	}
	if appPods > 0 {
		out[DataPlaneMemPerPod] = mem / float64(appPods)
	}
	if app != nil && app.PSSRounds > 0 && app.PSSBytes.Avg > 0 {
		out[DataPlaneMemToApp] = mem / (app.PSSBytes.Avg / mib)
	}
	return out
}
