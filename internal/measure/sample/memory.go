package sample

// Memory selects the memory figure a table shows.
type Memory int

// Memory figures.
const (
	// PSS, the default: proportional set size. Shared pages (the Envoy
	// binary's text, shared by every Envoy) are split among the processes
	// mapping them, so PSS adds up across processes.
	PSS Memory = iota
	// RSS: resident set size. Shared pages count in full in every process,
	// so RSS over-counts when summed.
	RSS
	// WorkingSet: the memory working set that metrics.k8s.io reports for a
	// container (its cgroup's memory use minus inactive file pages). The
	// Kubernetes sampler stores it in both RSSBytes and PSSBytes (with
	// HasPSS), so a table shows the PSS figures under this name.
	WorkingSet
	// CounterWorkingSet: the working set from the kubelet's own counters
	// (/metrics/resource), with CPU from its cumulative counters over
	// the measured window's equal intervals. Stored as WorkingSet is.
	CounterWorkingSet
)

// String returns "PSS", "RSS" or "working set".
func (m Memory) String() string {
	switch m {
	case RSS:
		return "RSS"
	case WorkingSet, CounterWorkingSet:
		return "working set"
	}
	return "PSS"
}
