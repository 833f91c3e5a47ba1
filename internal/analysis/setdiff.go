package analysis

import (
	"fmt"
	"strconv"
	"time"
)

// PlanSettings are the plan-wide settings a comparison of two result sets
// names when they differ, as the plan's parser reads them from plan.yaml
// (bench/plan.MethodSettings fills Plan.Settings; analysis sits below the
// plan's parser and does not read plan files itself).
type PlanSettings struct {
	Duration, Warmup, Drain, SampleInterval time.Duration
	Connections, Nodes                      int
	ReuseTopology                           bool
	// SendTick is the plan's send_tick (0: none).
	SendTick time.Duration
}

// methodDifferences lists what differs between two result sets besides
// the configs themselves: the settings every cell ran with (duration,
// warm-up, connections, sampling…), the machine (CPUs, CPU model,
// kernel) and the versions of meshbench and Envoy. Any of them can move a
// figure as much as a mesh version does, so the comparison names them
// instead of letting them pass for a difference between the sets' meshes.
func methodDifferences(a, b *Plan) []string {
	var out []string
	diff := func(what, va, vb string) {
		if va != vb {
			out = append(out, fmt.Sprintf("%s differs: A %s, B %s", what, orUnknown(va), orUnknown(vb)))
		}
	}
	pa, pb := a.Settings, b.Settings
	if pa != nil && pb != nil {
		d := func(x time.Duration) string { return x.String() }
		diff("duration", d(pa.Duration), d(pb.Duration))
		diff("warmup", d(pa.Warmup), d(pb.Warmup))
		diff("drain", d(pa.Drain), d(pb.Drain))
		diff("connections", strconv.Itoa(pa.Connections), strconv.Itoa(pb.Connections))
		diff("sample_interval", d(pa.SampleInterval), d(pb.SampleInterval))
		diff("nodes", strconv.Itoa(pa.Nodes), strconv.Itoa(pb.Nodes))
		diff("reuse_topology", strconv.FormatBool(pa.ReuseTopology), strconv.FormatBool(pb.ReuseTopology))
		diff("send_tick", d(pa.SendTick), d(pb.SendTick))
	} else {
		out = append(out, "the plans could not both be read, so their settings were not compared")
	}
	ma, mb := a.Manifest, b.Manifest
	if ma == nil || mb == nil {
		return out
	}
	diff("platform", ma.Platform, mb.Platform)
	diff("CPUs", strconv.Itoa(ma.Host.CPUs), strconv.Itoa(mb.Host.CPUs))
	diff("CPU model", ma.Host.CPUModel, mb.Host.CPUModel)
	diff("kernel", ma.Host.Kernel, mb.Host.Kernel)
	diff("meshbench version", ma.MeshbenchVersion, mb.MeshbenchVersion)
	diff("Envoy version", ma.EnvoyVersion, mb.EnvoyVersion)
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
