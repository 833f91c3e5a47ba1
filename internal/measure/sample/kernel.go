package sample

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// KernelTimes are the machine's kernel CPU times from /proc/stat's "cpu"
// line, summed over every CPU, in clock ticks (ClockTicksPerSecond):
// system (fields 3), irq (6) and softirq (7).
type KernelTimes struct {
	System, IRQ, SoftIRQ uint64
}

// ParseKernelTimes reads KernelTimes from the contents of /proc/stat.
func ParseKernelTimes(b []byte) (KernelTimes, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 8 || string(f[0]) != "cpu" {
		return KernelTimes{}, fmt.Errorf("parsing /proc/stat: first line %q is not the cpu line", line)
	}
	var v [8]uint64
	for i := 1; i < 8; i++ {
		n, ok := parseUint(f[i])
		if !ok {
			return KernelTimes{}, fmt.Errorf("parsing /proc/stat: cpu field %d %q is not a number", i, f[i])
		}
		v[i] = n
	}
	return KernelTimes{System: v[3], IRQ: v[6], SoftIRQ: v[7]}, nil
}

// KernelSnapshot is the machine's kernel times and the system time of
// some processes at one instant.
type KernelSnapshot struct {
	At      time.Time
	Machine KernelTimes
	// STime maps a PID to its system time (/proc/PID/stat field 15),
	// ticks; a process gone is absent.
	STime map[int]uint64
}

// ReadKernel takes a KernelSnapshot of the machine and of pids.
func ReadKernel(pids []int) (KernelSnapshot, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return KernelSnapshot{}, err
	}
	k, err := ParseKernelTimes(b)
	if err != nil {
		return KernelSnapshot{}, err
	}
	s := KernelSnapshot{At: time.Now(), Machine: k, STime: map[int]uint64{}}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		if st, err := ParseStat(b); err == nil && !st.Exited() {
			s.STime[pid] = st.STimeTicks
		}
	}
	return s, nil
}

// KernelCPU is the kernel's CPU over a window, in millicores (1000 =
// one core busy): the machine's system, irq and softirq time (Node,
// SoftIRQ its softirq part), and Outside, Node less the system time of
// the processes sampled in both snapshots: the kernel's work that no
// sampled process was charged with (softirq in ksoftirqd, kworkers,
// other processes' system time).
type KernelCPU struct {
	Node, SoftIRQ, Outside float64
}

// Keys of the kernel figures in a manifest's derived map and in
// analysis' figures, millicores.
const (
	KernelNodeCPU    = "kernel_node_cpu_m"
	KernelSoftIRQCPU = "kernel_softirq_cpu_m"
	KernelOutsideCPU = "kernel_outside_cpu_m"
)

// KernelBetween is the kernel's CPU from a to b. A process sampled in
// only one of them counts as outside.
func KernelBetween(a, b KernelSnapshot) (KernelCPU, error) {
	secs := b.At.Sub(a.At).Seconds()
	if secs <= 0 {
		return KernelCPU{}, errors.New("kernel CPU: the second snapshot is not after the first")
	}
	m := func(ticks uint64) float64 { return float64(ticks) / ClockTicksPerSecond / secs * 1000 }
	d := func(x, y uint64) uint64 {
		if y < x {
			return 0
		}
		return y - x
	}
	node := d(a.Machine.System, b.Machine.System) + d(a.Machine.IRQ, b.Machine.IRQ) + d(a.Machine.SoftIRQ, b.Machine.SoftIRQ)
	var procs uint64
	for pid, x := range a.STime {
		if y, ok := b.STime[pid]; ok {
			procs += d(x, y)
		}
	}
	out := KernelCPU{Node: m(node), SoftIRQ: m(d(a.Machine.SoftIRQ, b.Machine.SoftIRQ))}
	if procs < node {
		out.Outside = m(node - procs)
	}
	return out, nil
}
