package sample

import (
	"fmt"
	"io"
	"strings"
	"time"
)

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
	Memory Memory
}

// mib is one MiB (Mi), 2^20 bytes.
const mib = 1 << 20

// RenderTable writes the seed reports' resource table:
//
//	Component              CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
//	server sidecar         10m       20m       13.33m    19Mi      20Mi      19.50Mi
//	TOTAL                  …
//
// one row per group and a TOTAL row, then a note saying which memory the
// Mem columns hold. CPU is in millicores, memory in MiB (Mi, 2^20 bytes);
// min and max are whole numbers, as `kubectl top` prints them, avg has two
// decimals. Every column is as wide as its widest cell plus 3 spaces.
func RenderTable(w io.Writer, s Summary, opts TableOptions) error {
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
	case CounterWorkingSet:
		fmt.Fprintf(&b, "CPU by the kubelet's cumulative counters over %d equal intervals of the measured window (each counter interpolated to the intervals' edges): avg is the CPU over the whole window, exactly (over the intervals it ran in, for a container that appeared, disappeared or restarted); min and max are over the intervals.\n",
			s.Rounds)
	case WorkingSet:
		fmt.Fprintf(&b, "Each row is summed over its containers' fresh samples in every round; min, max and avg are over the rounds with one (TOTAL: %d of %d; a round where metrics.k8s.io served only samples already counted has none).\n",
			s.Total.Rounds, s.Rounds)
	default:
		fmt.Fprintf(&b, "Each row is summed over its processes in every round; min, max and avg are over the rounds (TOTAL: %d of %d).\n",
			s.Total.Rounds, s.Rounds)
	}
	if opts.Memory == PSS && s.Total.PSSRounds != s.Total.Rounds {
		fmt.Fprintf(&b, "PSS is not read every round: Mem is over the rounds that read it (TOTAL: %d of %d); - means no reading.\n",
			s.Total.PSSRounds, s.Rounds)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func memoryName(m Memory) string {
	switch m {
	case RSS:
		return "RSS (resident set size, shared pages counted in every process)"
	case WorkingSet:
		return "the working set (metrics.k8s.io: memory in use minus inactive file pages, per container)"
	case CounterWorkingSet:
		return "the working set (the kubelet's /metrics/resource: memory in use minus inactive file pages, per container, at each interval's end)"
	}
	return "PSS (proportional set size, shared pages split among their processes)"
}

func figureCells(name string, f Figures, mem Memory) []string {
	if f.Rounds == 0 {
		return []string{name, "-", "-", "-", "-", "-", "-"}
	}
	m := f.PSSBytes
	if mem == RSS {
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

// RenderOverhead writes what sampling cost: CPU and wall time per round,
// processes per round, and the sampler's average CPU load; then how often
// PSS was read and, when some rounds with samples read it and others did
// not, the CPU of a round of each kind:
//
//	Sampler overhead: 32.10ms CPU per round (max 160.20ms), …, 32.40m on average over 60 rounds.
//	PSS read every 5 rounds (12 of the 59 rounds with samples): 160.20ms CPU per round with it, 6.10ms without.
func RenderOverhead(w io.Writer, s Summary) error {
	o := s.Overhead
	var b strings.Builder
	fmt.Fprintf(&b, "Sampler overhead: %s CPU per round (max %s), %s wall, %.0f processes per round, %.2fm on average over %d rounds.\n",
		ms(o.RoundCPUNs.Avg), ms(o.RoundCPUNs.Max), ms(o.RoundWallNs.Avg), o.ProcessesPerRound.Avg, o.CPUMillicores, o.Rounds)
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
		fmt.Fprintf(&b, ": %s CPU per round with it, %s without", ms(o.RoundCPUNsPSS.Avg), ms(o.RoundCPUNsNoPSS.Avg))
	}
	b.WriteString(".\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func ms(ns float64) string {
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
