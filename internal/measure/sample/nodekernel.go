package sample

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A cluster node's kernel CPU, read on the node by meshbench's node
// reader (a pod of meshbench's image per node, `meshbench nodestat`,
// platform/kube): the node's /proc/stat (the host's, also inside a
// container) and the CPU split of the cgroup that holds every pod of the
// node (kubepods), each reading stamped with the machine's boot ID.

// CPUTimes are /proc/stat's "cpu" line, summed over every CPU, in clock
// ticks (ClockTicksPerSecond): fields 1–8.
type CPUTimes struct {
	User    uint64 `json:"user"`
	Nice    uint64 `json:"nice"`
	System  uint64 `json:"system"`
	Idle    uint64 `json:"idle"`
	IOWait  uint64 `json:"iowait"`
	IRQ     uint64 `json:"irq"`
	SoftIRQ uint64 `json:"softirq"`
	Steal   uint64 `json:"steal"`
}

// ParseCPUTimes reads CPUTimes from the contents of /proc/stat. Kernels
// before 2.6.11 have no steal field: it is 0 then.
func ParseCPUTimes(b []byte) (CPUTimes, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 8 || string(f[0]) != "cpu" {
		return CPUTimes{}, fmt.Errorf("parsing /proc/stat: first line %q is not the cpu line", line)
	}
	var v [9]uint64
	for i := 1; i < min(len(f), 9); i++ {
		n, ok := parseUint(f[i])
		if !ok {
			return CPUTimes{}, fmt.Errorf("parsing /proc/stat: cpu field %d %q is not a number", i, f[i])
		}
		v[i] = n
	}
	return CPUTimes{User: v[1], Nice: v[2], System: v[3], Idle: v[4], IOWait: v[5], IRQ: v[6], SoftIRQ: v[7], Steal: v[8]}, nil
}

// CgroupCPU is a cgroup's CPU time split into user and system, ns.
type CgroupCPU struct {
	UserNs   uint64 `json:"user_ns"`
	SystemNs uint64 `json:"system_ns"`
}

// ParseCpuacctStat reads a cgroup v1 cpuacct.stat ("user N", "system N",
// clock ticks).
func ParseCpuacctStat(b []byte) (CgroupCPU, error) {
	const tick = uint64(time.Second) / ClockTicksPerSecond
	u, s, err := twoKeys(b, "cpuacct.stat", "user", "system")
	return CgroupCPU{UserNs: u * tick, SystemNs: s * tick}, err
}

// ParseCPUStatV2 reads a cgroup v2 cpu.stat's user_usec and system_usec.
func ParseCPUStatV2(b []byte) (CgroupCPU, error) {
	u, s, err := twoKeys(b, "cpu.stat", "user_usec", "system_usec")
	return CgroupCPU{UserNs: u * 1000, SystemNs: s * 1000}, err
}

// twoKeys reads the values of keys a and b from a cgroup's flat keyed
// file ("key value" lines) called name.
func twoKeys(b []byte, name, a, c string) (uint64, uint64, error) {
	var va, vc uint64
	var seenA, seenC bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) != 2 {
			continue
		}
		k := string(f[0])
		if k != a && k != c {
			continue
		}
		n, ok := parseUint(f[1])
		if !ok {
			return 0, 0, fmt.Errorf("parsing %s: %s %q is not a number", name, k, f[1])
		}
		if k == a {
			va, seenA = n, true
		} else {
			vc, seenC = n, true
		}
	}
	if !seenA || !seenC {
		return 0, 0, fmt.Errorf("parsing %s: want %s and %s lines, got %q", name, a, c, b)
	}
	return va, vc, nil
}

// PodsCgroup is the cgroup that holds every pod of a node: its
// directory and how to read its CPU.
type PodsCgroup struct {
	// Dir is its directory; V2 says it is a cgroup v2 directory (cpu.stat)
	// rather than v1's cpuacct (cpuacct.stat).
	Dir string
	V2  bool
}

// Read reads the cgroup's CPU split.
func (p PodsCgroup) Read() (CgroupCPU, error) {
	if p.V2 {
		b, err := os.ReadFile(filepath.Join(p.Dir, "cpu.stat"))
		if err != nil {
			return CgroupCPU{}, err
		}
		return ParseCPUStatV2(b)
	}
	b, err := os.ReadFile(filepath.Join(p.Dir, "cpuacct.stat"))
	if err != nil {
		return CgroupCPU{}, err
	}
	return ParseCpuacctStat(b)
}

// FindPodsCgroup finds, under root (the host's /sys/fs/cgroup, mounted
// read-only in the reader's pod), the pods' cgroup of the node whose pod
// podUID is: the directory named kubepods or kubepods.slice, at root or
// one level below it (a kubelet's cgroupRoot, as the test nodes' /rn-node-N),
// that holds the pod's own cgroup (pod<UID>, or the systemd driver's
// …-pod<UID with _>.slice), directly or under its QoS class. On cgroup v1
// it looks in the cpuacct hierarchy. Several kubelets on one machine each
// have their own: the pod's UID picks its node's.
func FindPodsCgroup(root, podUID string) (PodsCgroup, error) {
	if podUID == "" {
		return PodsCgroup{}, errors.New("finding the pods' cgroup: no pod UID")
	}
	base, v2 := filepath.Join(root, "cpuacct"), false
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		base, v2 = root, true
	}
	var candidates []string
	for _, pattern := range []string{"kubepods", "kubepods.slice", "*/kubepods", "*/kubepods.slice"} {
		m, _ := filepath.Glob(filepath.Join(base, pattern))
		candidates = append(candidates, m...)
	}
	names := []string{"pod" + podUID, "pod" + strings.ReplaceAll(podUID, "-", "_")}
	holds := func(dir string) bool {
		found := false
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil // unreadable, or a file: nothing below it
			}
			if depth := strings.Count(strings.TrimPrefix(path, dir), string(filepath.Separator)); depth > 2 {
				return fs.SkipDir
			}
			n := strings.TrimSuffix(d.Name(), ".slice")
			if slices.ContainsFunc(names, func(s string) bool { return strings.HasSuffix(n, s) }) {
				found = true
				return fs.SkipAll
			}
			return nil
		})
		return found
	}
	for _, dir := range candidates {
		if holds(dir) {
			return PodsCgroup{Dir: dir, V2: v2}, nil
		}
	}
	return PodsCgroup{}, fmt.Errorf("finding the pods' cgroup: no kubepods cgroup under %s holds pod %s (looked at %d: %s)",
		base, podUID, len(candidates), strings.Join(candidates, ", "))
}

// NodeReading is one reading of a node by the node reader: one line of
// its output.
type NodeReading struct {
	// TimeUnixNs is when it was taken (the node's clock).
	TimeUnixNs int64 `json:"t_unix_ns"`
	// BootID is the machine's boot ID (/proc/sys/kernel/random/boot_id):
	// nodes that report the same one run on one machine.
	BootID string `json:"boot_id"`
	// Stat is /proc/stat's cpu line: the whole machine's.
	Stat CPUTimes `json:"proc_stat_ticks"`
	// Pods is the node's pods' cgroup's CPU (PodsCgroup).
	Pods CgroupCPU `json:"pods"`
}

// Time is TimeUnixNs as a time.
func (r NodeReading) Time() time.Time { return time.Unix(0, r.TimeUnixNs) }

// ReadNode takes a NodeReading: /proc/stat and the boot ID under proc
// (the host's /proc: "/proc" in a container too, since neither is
// namespaced) and pods' CPU.
func ReadNode(proc string, pods PodsCgroup) (NodeReading, error) {
	boot, err := os.ReadFile(filepath.Join(proc, "sys/kernel/random/boot_id"))
	if err != nil {
		return NodeReading{}, err
	}
	stat, err := os.ReadFile(filepath.Join(proc, "stat"))
	if err != nil {
		return NodeReading{}, err
	}
	p, err := pods.Read()
	if err != nil {
		return NodeReading{}, err
	}
	r := NodeReading{TimeUnixNs: time.Now().UnixNano(), BootID: strings.TrimSpace(string(boot)), Pods: p}
	r.Stat, err = ParseCPUTimes(stat)
	return r, err
}

// Keys of a cluster cell's kernel figures in its manifest's derived map
// and in analysis' figures, millicores, summed over the cell's machines
// (distinct boot IDs; never over nodes that share one): KernelNodeCPU
// and KernelSoftIRQCPU as on the lab (the machines' system + irq +
// softirq time, and its softirq part), KernelPodsSystemCPU the system
// time of every pod on their nodes (the pods' cgroups), and
// KernelOutsidePodsCPU the kernel time no pod was charged with: it holds
// the kubelet's, the container runtime's, kube-proxy's and every other
// host process's system time besides softirq work charged to no task.
const (
	KernelPodsSystemCPU  = "kernel_pods_system_cpu_m"
	KernelOutsidePodsCPU = "kernel_outside_pods_cpu_m"
)

// NodeKernelRule is how NodeKernelOver chooses its readings.
const NodeKernelRule = "per node, the node reader's first reading at or after the measured window's start and its last at or before its end " +
	"(the figures are over that span, the node's clock); per machine (boot ID), /proc/stat of its first node by name, and the pods' cgroups of all its nodes summed"

// NodeKernelReport is what the node readers measured over a cluster
// cell's window (resources.json's node_kernel).
type NodeKernelReport struct {
	Rule     string          `json:"rule" jsonschema:"required"`
	Machines []MachineKernel `json:"machines" jsonschema:"required"`
	// Missing are the nodes whose reader gave no figure, and why.
	Missing []NodeKernelMissing `json:"missing,omitempty"`
}

// NodeKernelMissing is a node without a kernel figure.
type NodeKernelMissing struct {
	Node string `json:"node"`
	Why  string `json:"why"`
}

// MachineKernel is one machine's kernel CPU over a window, millicores
// (1000 = one core busy): one node's, or, when several nodes report the
// same boot ID (kubelets on one host), the machine they share, counted
// once.
type MachineKernel struct {
	Nodes  []string `json:"nodes" jsonschema:"required"`
	BootID string   `json:"boot_id" jsonschema:"required"`
	// From and To are the readings of /proc/stat the figures are over.
	From    time.Time `json:"from" jsonschema:"required"`
	To      time.Time `json:"to" jsonschema:"required"`
	Seconds float64   `json:"seconds" jsonschema:"required"`
	// NodeCPUm is the machine's busy time (all but idle and iowait);
	// NodeKernelCPUm its system + irq + softirq time, SoftIRQCPUm the
	// softirq part.
	NodeCPUm       float64 `json:"node_cpu_m" jsonschema:"required"`
	NodeKernelCPUm float64 `json:"node_kernel_cpu_m" jsonschema:"required"`
	SoftIRQCPUm    float64 `json:"softirq_cpu_m" jsonschema:"required"`
	// PodsUserCPUm and PodsSystemCPUm are the pods' cgroups' user and
	// system time (every pod on the nodes, meshbench's own included).
	PodsUserCPUm   float64 `json:"pods_user_cpu_m" jsonschema:"required"`
	PodsSystemCPUm float64 `json:"pods_system_cpu_m" jsonschema:"required"`
	// OutsidePodsCPUm is NodeKernelCPUm less PodsSystemCPUm (0 when the
	// pods' exceeds it, by the two counters' tick rounding): the kubelet's,
	// the runtime's, kube-proxy's and the host's other processes' system
	// time, and irq and softirq work not charged to a pod's task.
	OutsidePodsCPUm float64 `json:"kernel_outside_pods_cpu_m" jsonschema:"required"`
}

// Name is "node X" or "the machine shared by nodes X, Y".
func (m MachineKernel) Name() string {
	if len(m.Nodes) == 1 {
		return "node " + m.Nodes[0]
	}
	return "the machine shared by nodes " + strings.Join(m.Nodes, ", ")
}

// NodeKernelOver is the kernel CPU over [from, to] from each node's
// readings (NodeKernelRule). A node with fewer than two readings in the
// window, or whose boot ID changed in it, is Missing. It is a pure
// function of its arguments.
func NodeKernelOver(readings map[string][]NodeReading, from, to time.Time) NodeKernelReport {
	rep := NodeKernelReport{Rule: NodeKernelRule, Machines: []MachineKernel{}}
	type span struct {
		node string
		a, b NodeReading
	}
	var spans []span
	for _, node := range slices.Sorted(maps.Keys(readings)) {
		var a, b *NodeReading
		for i := range readings[node] {
			x := &readings[node][i]
			if x.Time().Before(from) || x.Time().After(to) {
				continue
			}
			if a == nil || x.TimeUnixNs < a.TimeUnixNs {
				a = x
			}
			if b == nil || x.TimeUnixNs > b.TimeUnixNs {
				b = x
			}
		}
		switch {
		case a == nil || a.TimeUnixNs == b.TimeUnixNs:
			rep.Missing = append(rep.Missing, NodeKernelMissing{node, fmt.Sprintf("fewer than two readings in the measured window (%d readings in all)", len(readings[node]))})
		case a.BootID != b.BootID:
			rep.Missing = append(rep.Missing, NodeKernelMissing{node, "its boot ID changed in the measured window (a reboot)"})
		default:
			spans = append(spans, span{node, *a, *b})
		}
	}
	m := func(ticks, secs float64) float64 { return ticks / ClockTicksPerSecond / secs * 1000 }
	d := func(x, y uint64) float64 {
		if y < x {
			return 0
		}
		return float64(y - x)
	}
	byBoot := map[string]int{}
	for _, s := range spans {
		i, ok := byBoot[s.a.BootID]
		secs := s.b.Time().Sub(s.a.Time()).Seconds()
		if !ok {
			// The machine's /proc/stat: its first node's readings.
			a, b := s.a.Stat, s.b.Stat
			kernel := d(a.System, b.System) + d(a.IRQ, b.IRQ) + d(a.SoftIRQ, b.SoftIRQ)
			busy := kernel + d(a.User, b.User) + d(a.Nice, b.Nice) + d(a.Steal, b.Steal)
			i = len(rep.Machines)
			byBoot[s.a.BootID] = i
			rep.Machines = append(rep.Machines, MachineKernel{BootID: s.a.BootID, From: s.a.Time().UTC(), To: s.b.Time().UTC(), Seconds: secs,
				NodeCPUm: m(busy, secs), NodeKernelCPUm: m(kernel, secs), SoftIRQCPUm: m(d(a.SoftIRQ, b.SoftIRQ), secs)})
		}
		mk := &rep.Machines[i]
		mk.Nodes = append(mk.Nodes, s.node)
		mk.PodsUserCPUm += d(s.a.Pods.UserNs, s.b.Pods.UserNs) / 1e9 / secs * 1000
		mk.PodsSystemCPUm += d(s.a.Pods.SystemNs, s.b.Pods.SystemNs) / 1e9 / secs * 1000
	}
	for i := range rep.Machines {
		mk := &rep.Machines[i]
		mk.OutsidePodsCPUm = max(0, mk.NodeKernelCPUm-mk.PodsSystemCPUm)
	}
	return rep
}

// Derived are the report's figures for a manifest's derived map, summed
// over its machines; nil when a node is missing (a sum without it would
// look whole) or there is no machine.
func (r NodeKernelReport) Derived() map[string]float64 {
	if len(r.Missing) > 0 || len(r.Machines) == 0 {
		return nil
	}
	out := map[string]float64{}
	for _, mk := range r.Machines {
		out[KernelNodeCPU] += mk.NodeKernelCPUm
		out[KernelSoftIRQCPU] += mk.SoftIRQCPUm
		out[KernelPodsSystemCPU] += mk.PodsSystemCPUm
		out[KernelOutsidePodsCPU] += mk.OutsidePodsCPUm
	}
	return out
}
