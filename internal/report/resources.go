package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// The resource tables of a run's samples (sample.Summary), as `meshbench
// run` prints them; moved here from sample so that report owns every
// table.

// GroupBy selects a table's rows.
type GroupBy int

// Table rows.
const (
	ByComponent GroupBy = iota // one row per component; header "Component"
	ByCategory                 // one row per category; header "Category"
	ByProcess                  // one row per process; header "Process"
)

// TableOptions choose a table's rows and memory figure.
type TableOptions struct {
	By     GroupBy
	Memory sample.Memory
}

// mib is one MiB (Mi), 2^20 bytes.
const mib = 1 << 20

// ResourceTable writes the seed reports' resource table:
//
//	Component              CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
//	server sidecar         10m       20m       13.33m    19Mi      20Mi      19.50Mi
//	TOTAL                  …
//
// one row per group and a TOTAL row, then a note saying which memory the
// Mem columns hold. CPU is in millicores, memory in MiB (Mi, 2^20 bytes);
// min and max are whole numbers, as `kubectl top` prints them, avg has two
// decimals. Every column is as wide as its widest cell plus 3 spaces.
func ResourceTable(w io.Writer, s sample.Summary, opts TableOptions) error {
	header := "Component"
	var rows [][]string
	switch opts.By {
	case ByCategory:
		header = "Category"
		for _, g := range s.Categories {
			rows = append(rows, figureCells(g.Name, g.Figures, opts.Memory))
		}
	case ByProcess:
		header = "Process"
		names := map[string]int{}
		for _, p := range s.Processes {
			names[p.Name]++
		}
		for _, p := range s.Processes {
			name := p.Name
			if names[name] > 1 { // the same name under two PIDs (a restart)
				name = fmt.Sprintf("%s (pid %d)", name, p.PID)
			}
			rows = append(rows, figureCells(name, p.Figures, opts.Memory))
		}
	default:
		for _, g := range s.Components {
			rows = append(rows, figureCells(g.Name, g.Figures, opts.Memory))
		}
	}
	rows = append(rows, figureCells("TOTAL", s.Total, opts.Memory))
	table := append([][]string{{header, "CPU_min", "CPU_max", "CPU_avg", "Mem_min", "Mem_max", "Mem_avg"}}, rows...)

	var b strings.Builder
	WriteColumns(&b, table)
	fmt.Fprintf(&b, "CPU in millicores (1000m = one core); Mem is %s in Mi (2^20 bytes).\n", memoryName(opts.Memory))
	switch opts.Memory {
	case sample.CounterWorkingSet:
		fmt.Fprintf(&b, "CPU by the kubelet's cumulative counters over %d equal intervals of the measured window (each counter interpolated to the intervals' edges): avg is the CPU over the whole window, exactly (over the intervals it ran in, for a container that appeared, disappeared or restarted); min and max are over the intervals.\n",
			s.Rounds)
	case sample.WorkingSet:
		fmt.Fprintf(&b, "Each row is summed over its containers' fresh samples in every round; min, max and avg are over the rounds with one (TOTAL: %d of %d; a round where metrics.k8s.io served only samples already counted has none).\n",
			s.Total.Rounds, s.Rounds)
	default:
		fmt.Fprintf(&b, "Each row is summed over its processes in every round; min, max and avg are over the rounds (TOTAL: %d of %d).\n",
			s.Total.Rounds, s.Rounds)
	}
	if opts.Memory == sample.PSS && s.Total.PSSRounds != s.Total.Rounds {
		fmt.Fprintf(&b, "PSS is not read every round: Mem is over the rounds that read it (TOTAL: %d of %d); - means no reading.\n",
			s.Total.PSSRounds, s.Rounds)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func memoryName(m sample.Memory) string {
	switch m {
	case sample.RSS:
		return "RSS (resident set size, shared pages counted in every process)"
	case sample.WorkingSet:
		return "the working set (metrics.k8s.io: memory in use minus inactive file pages, per container)"
	case sample.CounterWorkingSet:
		return "the working set (the kubelet's /metrics/resource: memory in use minus inactive file pages, per container, at each interval's end)"
	}
	return "PSS (proportional set size, shared pages split among their processes)"
}

func figureCells(name string, f sample.Figures, mem sample.Memory) []string {
	if f.Rounds == 0 {
		return []string{name, "-", "-", "-", "-", "-", "-"}
	}
	m := f.PSSBytes
	if mem == sample.RSS {
		m = f.RSSBytes
	} else if f.PSSRounds == 0 {
		return []string{name,
			fmt.Sprintf("%.0fm", f.CPUMillicores.Min),
			fmt.Sprintf("%.0fm", f.CPUMillicores.Max),
			fmt.Sprintf("%.2fm", f.CPUMillicores.Avg),
			"-", "-", "-",
		}
	}
	return []string{name,
		fmt.Sprintf("%.0fm", f.CPUMillicores.Min),
		fmt.Sprintf("%.0fm", f.CPUMillicores.Max),
		fmt.Sprintf("%.2fm", f.CPUMillicores.Avg),
		fmt.Sprintf("%.0fMi", m.Min/mib),
		fmt.Sprintf("%.0fMi", m.Max/mib),
		fmt.Sprintf("%.2fMi", m.Avg/mib),
	}
}

// SamplerOverhead writes what sampling cost: CPU and wall time per round,
// processes per round, and the sampler's average CPU load; then how often
// PSS was read and, when some rounds with samples read it and others did
// not, the CPU of a round of each kind:
//
//	Sampler overhead: 32.10ms CPU per round (max 160.20ms), …, 32.40m on average over 60 rounds.
//	PSS read every 5 rounds (12 of the 59 rounds with samples): 160.20ms CPU per round with it, 6.10ms without.
func SamplerOverhead(w io.Writer, s sample.Summary) error {
	o := s.Overhead
	var b strings.Builder
	fmt.Fprintf(&b, "Sampler overhead: %s CPU per round (max %s), %s wall, %.0f processes per round, %.2fm on average over %d rounds.\n",
		overheadMs(o.RoundCPUNs.Avg), overheadMs(o.RoundCPUNs.Max), overheadMs(o.RoundWallNs.Avg), o.ProcessesPerRound.Avg, o.CPUMillicores, o.Rounds)
	e := o.PSSEveryRounds
	switch {
	case o.PSSRounds == 0:
		b.WriteString("PSS not read")
	case o.PSSRounds == 1:
		b.WriteString("PSS read once")
	case e.Min == 1 && e.Max == 1:
		b.WriteString("PSS read every round")
	case e.Min == e.Max:
		fmt.Fprintf(&b, "PSS read every %.0f rounds", e.Min)
	default:
		fmt.Fprintf(&b, "PSS read every %.0f to %.0f rounds", e.Min, e.Max)
	}
	fmt.Fprintf(&b, " (%d of the %d rounds with samples)", o.PSSRounds, o.PSSRounds+o.NoPSSRounds)
	if o.PSSRounds > 0 && o.NoPSSRounds > 0 {
		fmt.Fprintf(&b, ": %s CPU per round with it, %s without", overheadMs(o.RoundCPUNsPSS.Avg), overheadMs(o.RoundCPUNsNoPSS.Avg))
	}
	b.WriteString(".\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func overheadMs(ns float64) string {
	return fmt.Sprintf("%.2fms", ns/float64(time.Millisecond))
}

// WriteColumns writes table (its first row the header) in the seed
// reports' layout: every column as wide as its widest cell plus 3 spaces,
// the last one unpadded.
func WriteColumns(b *strings.Builder, table [][]string) {
	if len(table) == 0 {
		return
	}
	widths := make([]int, len(table[0]))
	for _, row := range table {
		for i, cell := range row {
			widths[i] = max(widths[i], len(cell)+3)
		}
	}
	for _, row := range table {
		for i, cell := range row {
			if i == len(row)-1 {
				b.WriteString(cell)
			} else {
				fmt.Fprintf(b, "%-*s", widths[i], cell)
			}
		}
		b.WriteByte('\n')
	}
}

// NodeTable writes the per-node table, in the layout of ResourceTable plus
// each average as a share of the node's allocatable ("-" when unknown):
//
//	Node          CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg    CPU_%avg   Mem_%avg
//	kwok-node-0   500m      501m      500.20m   128Mi     128Mi     128.00Mi   1.56%      0.05%
//
// kubeletCounters says the figures came from the kubelet's counters
// (kube.SourceKubelet) rather than metrics.k8s.io; the note names it.
func NodeTable(w io.Writer, nodes []sample.NodeSummary, kubeletCounters bool) error {
	table := [][]string{{"Node", "CPU_min", "CPU_max", "CPU_avg", "Mem_min", "Mem_max", "Mem_avg", "CPU_%avg", "Mem_%avg"}}
	for _, n := range nodes {
		cpuPct, memPct := "-", "-"
		if n.AllocatableCPUMillicores > 0 {
			cpuPct = fmt.Sprintf("%.2f%%", n.CPUMillicores.Avg/n.AllocatableCPUMillicores*100)
		}
		if n.AllocatableMemoryBytes > 0 {
			memPct = fmt.Sprintf("%.2f%%", n.MemoryBytes.Avg/float64(n.AllocatableMemoryBytes)*100)
		}
		table = append(table, []string{n.Name,
			fmt.Sprintf("%.0fm", n.CPUMillicores.Min), fmt.Sprintf("%.0fm", n.CPUMillicores.Max), fmt.Sprintf("%.2fm", n.CPUMillicores.Avg),
			fmt.Sprintf("%.0fMi", n.MemoryBytes.Min/mib), fmt.Sprintf("%.0fMi", n.MemoryBytes.Max/mib), fmt.Sprintf("%.2fMi", n.MemoryBytes.Avg/mib),
			cpuPct, memPct})
	}
	var b strings.Builder
	WriteColumns(&b, table)
	from := "metrics.k8s.io"
	if kubeletCounters {
		from = "the kubelet's counters (node_cpu_usage_seconds_total, node_memory_working_set_bytes)"
	}
	fmt.Fprintf(&b, "Node usage from %s: every container on the node and the node's own processes; Mem is the working set in Mi (2^20 bytes); %% of allocatable.\n", from)
	for _, g := range sample.SharedMachines(nodes) {
		fmt.Fprintf(&b, "Nodes %s share one machine (same boot ID): each of their rows counts that whole machine, so summed they double count; the pod and container rows are right.\n", strings.Join(g, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// NamespaceNote says what NamespaceTable's figures are (once for any
// number of tables).
func NamespaceNote(w io.Writer, mem sample.Memory) error {
	_, err := fmt.Fprintf(w, "Each namespace's containers (their proxies included, and all of the mesh's namespace: idle parts too) summed per interval, as in the seed reports' tables; TOTAL sums the rows; Mem is %s.\n", memoryName(mem))
	return err
}

// NamespaceTable writes the seed reports' per-namespace table of a
// cluster cell:
//
//	Namespace       CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
//	linkerd         2m        7m        3.17m     78Mi      79Mi      78.55Mi
//	meshbench-app   …
//	TOTAL           …
//
// the mesh's namespaces and the app's (each summed over its containers,
// sidecars included, per interval), TOTAL their sum, then a line with the
// load's namespace, which the table leaves out as the seed reports' load
// ran outside the cluster. Cells as ResourceTable's; NamespaceNote says
// what they are.
func NamespaceTable(w io.Writer, t sample.NamespaceTable, mem sample.Memory) error {
	table := [][]string{{"Namespace", "CPU_min", "CPU_max", "CPU_avg", "Mem_min", "Mem_max", "Mem_avg"}}
	for _, g := range t.Rows {
		table = append(table, figureCells(g.Name, g.Figures, mem))
	}
	table = append(table, figureCells("TOTAL", t.Total, mem))
	var b strings.Builder
	WriteColumns(&b, table)
	if l := t.Load; l != nil {
		c := figureCells(l.Name, l.Figures, mem)
		fmt.Fprintf(&b, "Not in TOTAL: the load's namespace %s (the seed reports' load ran outside the cluster): CPU_avg %s, Mem_avg %s.\n", l.Name, c[3], c[6])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// NodeKernelTable writes a cluster cell's kernel CPU per machine (the
// node readers', sample.NodeKernelOver), millicores:
//
//	Machine                                   Node_CPU   Kernel   Softirq   Pods_sys   Kernel_outside_pods   Seconds
//	the machine shared by nodes rn-0, rn-1   812m       301m     95m       120m       181m                  28.0
//
// then what the figures are and the nodes without one (note: "" for
// none); a machine that several nodes share is one row, never summed.
func NodeKernelTable(w io.Writer, rep *sample.NodeKernelReport, note string) error {
	var b strings.Builder
	if rep != nil && len(rep.Machines) > 0 {
		table := [][]string{{"Machine", "Node_CPU", "Kernel", "Softirq", "Pods_sys", "Kernel_outside_pods", "Seconds"}}
		for _, m := range rep.Machines {
			table = append(table, []string{m.Name(), fmt.Sprintf("%.0fm", m.NodeCPUm), fmt.Sprintf("%.0fm", m.NodeKernelCPUm),
				fmt.Sprintf("%.0fm", m.SoftIRQCPUm), fmt.Sprintf("%.0fm", m.PodsSystemCPUm), fmt.Sprintf("%.0fm", m.OutsidePodsCPUm),
				fmt.Sprintf("%.1f", m.Seconds)})
		}
		WriteColumns(&b, table)
		b.WriteString("Kernel CPU from meshbench's node readers (/proc/stat and the pods' cgroup on each node): Kernel is the machine's system + irq + softirq time; " +
			"Pods_sys the system time of every pod on its nodes; Kernel_outside_pods the rest: the kubelet's, the container runtime's, kube-proxy's and the rest of the host's kernel time, and softirq work charged to no pod.\n")
		for _, m := range rep.Machines {
			if len(m.Nodes) > 1 {
				fmt.Fprintf(&b, "Nodes %s report one boot ID: their machine's figures are counted once, for all of them.\n", strings.Join(m.Nodes, ", "))
			}
		}
	}
	if note != "" {
		fmt.Fprintf(&b, "%s.\n", strings.TrimSuffix(note, "."))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
