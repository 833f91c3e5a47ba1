package sample

import (
	"cmp"
	"slices"
	"time"
)

// NodeSample is one node's usage as metrics.k8s.io or the kubelet reported it: every
// container on the node plus the node's own processes.
type NodeSample struct {
	Name string `json:"name"`
	// Time is the sample's timestamp, the end of its window.
	Time   time.Time     `json:"time"`
	Window time.Duration `json:"window_ns"`
	// CPUMillicores over the window (1000 = one core); MemoryBytes, the
	// node's memory working set.
	CPUMillicores float64 `json:"cpu_millicores"`
	MemoryBytes   uint64  `json:"memory_bytes"`
	// AllocatableCPUMillicores and AllocatableMemoryBytes are the node's
	// allocatable resources (0: unknown).
	AllocatableCPUMillicores float64 `json:"allocatable_cpu_millicores,omitempty"`
	AllocatableMemoryBytes   uint64  `json:"allocatable_memory_bytes,omitempty"`
}

// NodeRound holds the fresh node samples of one round.
type NodeRound struct {
	Index int          `json:"round"`
	Time  time.Time    `json:"time"`
	Nodes []NodeSample `json:"nodes"`
}

// NodeSummary is one node's usage over the rounds with a fresh sample of
// it.
type NodeSummary struct {
	Name          string `json:"name"`
	Rounds        int    `json:"rounds"`
	CPUMillicores Stats  `json:"cpu_millicores"`
	MemoryBytes   Stats  `json:"memory_bytes"`
	// AllocatableCPUMillicores and AllocatableMemoryBytes: the last known
	// (0: unknown).
	AllocatableCPUMillicores float64 `json:"allocatable_cpu_millicores"`
	AllocatableMemoryBytes   uint64  `json:"allocatable_memory_bytes"`
	// BootID is the node's boot ID (status.nodeInfo.bootID), "" when
	// unknown. Nodes with the same one run on one machine (several
	// kubelets on one host, as the real test nodes do): each one's row
	// counts the whole machine.
	BootID string `json:"boot_id,omitempty"`
}

// SharedMachines groups the nodes that report the same boot ID (two or
// more per group), in name order.
func SharedMachines(nodes []NodeSummary) [][]string {
	by := map[string][]string{}
	var ids []string
	for _, n := range nodes {
		if n.BootID == "" {
			continue
		}
		if by[n.BootID] == nil {
			ids = append(ids, n.BootID)
		}
		by[n.BootID] = append(by[n.BootID], n.Name)
	}
	var out [][]string
	for _, id := range ids {
		if g := by[id]; len(g) > 1 {
			slices.Sort(g)
			out = append(out, g)
		}
	}
	return out
}

// SummarizeNodes returns min, max and avg of every node's fresh samples,
// by node name. It is a pure function of rounds.
func SummarizeNodes(rounds []NodeRound) []NodeSummary {
	type accum struct {
		NodeSummary
		cpuSum, memSum float64
	}
	byName := map[string]*accum{}
	for _, r := range rounds {
		for _, n := range r.Nodes {
			a, ok := byName[n.Name]
			if !ok {
				a = &accum{NodeSummary: NodeSummary{Name: n.Name,
					CPUMillicores: Stats{Min: n.CPUMillicores, Max: n.CPUMillicores},
					MemoryBytes:   Stats{Min: float64(n.MemoryBytes), Max: float64(n.MemoryBytes)}}}
				byName[n.Name] = a
			}
			a.Rounds++
			a.cpuSum += n.CPUMillicores
			a.memSum += float64(n.MemoryBytes)
			a.CPUMillicores.Min, a.CPUMillicores.Max = min(a.CPUMillicores.Min, n.CPUMillicores), max(a.CPUMillicores.Max, n.CPUMillicores)
			m := float64(n.MemoryBytes)
			a.MemoryBytes.Min, a.MemoryBytes.Max = min(a.MemoryBytes.Min, m), max(a.MemoryBytes.Max, m)
			if n.AllocatableCPUMillicores > 0 {
				a.AllocatableCPUMillicores = n.AllocatableCPUMillicores
			}
			if n.AllocatableMemoryBytes > 0 {
				a.AllocatableMemoryBytes = n.AllocatableMemoryBytes
			}
		}
	}
	out := make([]NodeSummary, 0, len(byName))
	for _, a := range byName {
		a.CPUMillicores.Avg = a.cpuSum / float64(a.Rounds)
		a.MemoryBytes.Avg = a.memSum / float64(a.Rounds)
		out = append(out, a.NodeSummary)
	}
	slices.SortFunc(out, func(a, b NodeSummary) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
