// Package fault is what goes wrong on purpose inside a cell's measured
// window (issue 31): a mesh part killed and restarted, its CPU capped,
// some of the app's replicas slowed, a CPU hog beside the server. It
// holds the faults as data (Fault, Parse), which faults mean nothing for
// a mesh and why (Skip), and the scheduler that applies one at its time
// and undoes it at its end or the cell's, whatever happens (Schedule).
// What a fault does to a platform's processes is the platform's: it hands
// the scheduler a Target.
package fault

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/cgroup"
	"github.com/meshbench/meshbench/internal/workload"
)

// Kind is what a fault does.
type Kind string

// The kinds.
const (
	// Kill sends SIGKILL to a part's process; its supervisor starts it
	// again as the platform's would.
	Kill Kind = "kill"
	// CPULimit caps a part's CPU (its cgroup's quota).
	CPULimit Kind = "cpu-limit"
	// SlowReplica makes N of the app's replicas answer Delay later.
	SlowReplica Kind = "slow-replica"
	// NoisyNeighbour runs a CPU hog of Millicores on the server's node.
	NoisyNeighbour Kind = "noisy-neighbour"
)

// Kinds lists the kinds in the order help texts show them.
var Kinds = []Kind{Kill, CPULimit, SlowReplica, NoisyNeighbour}

// None is the fault axis's value for a cell without a fault.
const None = "none"

// MaxMillicores bounds a limit or a hog: 64 cores.
const MaxMillicores = 64000

// Fault is one fault of a cell. The zero value is no fault.
type Fault struct {
	Kind Kind
	// Part is the mesh part a Kill or CPULimit hits.
	Part mesh.Part
	// Millicores is a CPULimit's limit or a NoisyNeighbour's hog.
	Millicores int
	// Replicas is how many of the app's replicas a SlowReplica slows,
	// Delay how much later they answer; Service is the app's service
	// whose replicas they are ("": the entry, the one the load calls;
	// faces: "color", its gRPC backend).
	Replicas int
	Delay    time.Duration
	Service  string
	// At is when the fault starts, from the start of the measured window.
	At time.Duration
	// For is how long it lasts; 0: to the end of the window. A Kill is an
	// instant: the part is back when its supervisor has restarted it.
	For time.Duration
}

// Zero reports whether f is no fault.
func (f Fault) Zero() bool { return f.Kind == "" }

// Syntax is the fault's form for help texts and problem lines.
const Syntax = "kill:PART, cpu-limit:PART=MILLICORES, slow-replica:[SERVICE/]N=DELAY or noisy-neighbour:MILLICORES, then @AT (from the window's start) and +FOR (its length; none: to the window's end), e.g. kill:node-proxy@3s, cpu-limit:sidecar=100@2s+5s; PART is node-proxy, waypoint, sidecar or control-plane"

// Parse reads one fault: "none" or "" is the zero Fault.
func Parse(s string) (Fault, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == None {
		return Fault{}, nil
	}
	bad := func(why string) (Fault, error) {
		return Fault{}, fmt.Errorf("fault %q: %s; allowed: %s", s, why, Syntax)
	}
	var f Fault
	body, when, timed := strings.Cut(s, "@")
	if timed {
		at, length, hasFor := strings.Cut(when, "+")
		d, err := time.ParseDuration(at)
		if err != nil || d < 0 {
			return bad("@" + at + " is not a duration of 0s or more")
		}
		f.At = d
		if hasFor {
			d, err := time.ParseDuration(length)
			if err != nil || d <= 0 {
				return bad("+" + length + " is not a duration above 0s")
			}
			f.For = d
		}
	}
	kind, arg, _ := strings.Cut(body, ":")
	f.Kind = Kind(kind)
	switch f.Kind {
	case Kill:
		f.Part = mesh.Part(arg)
		if !knownPart(f.Part) {
			return bad("unknown part " + strconv.Quote(arg))
		}
		if f.For > 0 {
			return bad("a kill is an instant (its part comes back when restarted): no +FOR")
		}
	case CPULimit:
		part, m, ok := strings.Cut(arg, "=")
		f.Part = mesh.Part(part)
		if !knownPart(f.Part) {
			return bad("unknown part " + strconv.Quote(part))
		}
		if !ok {
			return bad("no =MILLICORES")
		}
		n, err := millicores(m)
		if err != nil {
			return bad(err.Error())
		}
		f.Millicores = n
	case SlowReplica:
		n, d, ok := strings.Cut(arg, "=")
		if !ok {
			return bad("no =DELAY")
		}
		if svc, num, found := strings.Cut(n, "/"); found {
			if svc == "" || strings.ContainsAny(svc, " @+") {
				return bad("service " + strconv.Quote(svc) + " is not a service name")
			}
			f.Service, n = svc, num
		}
		r, err := strconv.Atoi(n)
		if err != nil || r < 1 {
			return bad("replicas " + strconv.Quote(n) + " is not a whole number of 1 or more")
		}
		delay, err := time.ParseDuration(d)
		if err != nil || delay <= 0 || delay > workload.MaxDelay {
			return bad(fmt.Sprintf("delay %q is not a duration above 0s and at most %s", d, workload.MaxDelay))
		}
		f.Replicas, f.Delay = r, delay
	case NoisyNeighbour:
		n, err := millicores(arg)
		if err != nil {
			return bad(err.Error())
		}
		f.Millicores = n
	default:
		return bad("unknown kind " + strconv.Quote(kind))
	}
	return f, nil
}

func knownPart(p mesh.Part) bool {
	for _, q := range mesh.Parts {
		if p == q {
			return true
		}
	}
	return false
}

// millicores reads "200" or "200m".
func millicores(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "m"))
	if err != nil || n < cgroup.MinMillicores || n > MaxMillicores {
		return 0, fmt.Errorf("millicores %q is not a whole number from %d to %d", s, cgroup.MinMillicores, MaxMillicores)
	}
	return n, nil
}

// String is f as Parse reads it ("none" for no fault).
func (f Fault) String() string {
	if f.Zero() {
		return None
	}
	s := string(f.Kind) + ":" + f.arg() + "@" + f.At.String()
	if f.For > 0 {
		s += "+" + f.For.String()
	}
	return s
}

func (f Fault) arg() string {
	switch f.Kind {
	case Kill:
		return string(f.Part)
	case CPULimit:
		return string(f.Part) + "=" + strconv.Itoa(f.Millicores)
	case SlowReplica:
		s := strconv.Itoa(f.Replicas) + "=" + f.Delay.String()
		if f.Service != "" {
			s = f.Service + "/" + s
		}
		return s
	default:
		return strconv.Itoa(f.Millicores)
	}
}

// ID is f in a cell's ID: [a-z0-9.-] only ("kill-node-proxy-at3s",
// "cpu-limit-sidecar-100m-at2s-for5s"); "" for no fault.
func (f Fault) ID() string {
	if f.Zero() {
		return ""
	}
	var arg string
	switch f.Kind {
	case Kill:
		arg = string(f.Part)
	case CPULimit:
		arg = fmt.Sprintf("%s-%dm", f.Part, f.Millicores)
	case SlowReplica:
		arg = fmt.Sprintf("%d-%s", f.Replicas, f.Delay)
		if f.Service != "" {
			arg = f.Service + "-" + arg
		}
	default:
		arg = fmt.Sprintf("%dm", f.Millicores)
	}
	s := string(f.Kind) + "-" + arg + "-at" + f.At.String()
	if f.For > 0 {
		s += "-for" + f.For.String()
	}
	return strings.NewReplacer("µ", "u").Replace(s)
}

// Check says why f cannot run in a cell whose measured window lasts
// window: it must start inside it.
func (f Fault) Check(window time.Duration) error {
	if f.Zero() {
		return nil
	}
	if f.At >= window {
		return fmt.Errorf("fault %s starts at %s, not inside the %s measured window", f, f.At, window)
	}
	return nil
}

// Skip is why fault f means nothing for mesh m with app app of replicas
// replicas per service (lab: on the local lab, with its own configs and
// stand-in control plane), "" when it means something. A plan skips such
// a cell with the reason; run refuses it.
func Skip(f Fault, m *mesh.Mesh, app topology.App, replicas int, lab bool) string {
	return skip(f, m, app, replicas, lab, false)
}

// ControlPlaneLab is the local lab's own control plane (its hand-rendered
// configs, Linkerd's stand-in): the plan's control_plane default. Any
// other value there is a mesh's real control plane (istiod, linkerd).
const ControlPlaneLab = "lab"

// SkipLab is Skip on the local lab whose proxies control plane cp
// configures: ControlPlaneLab or "", the lab's own; another, the mesh's
// real control plane, which the lab runs as processes of its own and
// restarts as a kubelet would (kill:control-plane hits it).
func SkipLab(f Fault, m *mesh.Mesh, app topology.App, replicas int, cp string) string {
	return skip(f, m, app, replicas, true, cp != "" && cp != ControlPlaneLab)
}

func skip(f Fault, m *mesh.Mesh, app topology.App, replicas int, lab, real bool) string {
	switch f.Kind {
	case Kill, CPULimit:
		spec, ok := m.Parts[f.Part]
		if !ok {
			return fmt.Sprintf("mesh %s has no %s (its parts: %s)", m.Name, f.Part, m.PartList())
		}
		if lab && !real && spec.NoLab != "" {
			return fmt.Sprintf("%s of mesh %s: %s", f.Part, m.Name, spec.NoLab)
		}
		if lab && !real && f.Part == mesh.PartControlPlane {
			return fmt.Sprintf("%s of mesh %s: not with control plane lab (its stand-in control plane is not restarted by a supervisor); use control plane linkerd", f.Part, m.Name)
		}
	case SlowReplica:
		if f.Service != "" && !slices.Contains(topology.ServiceNames(app), f.Service) {
			return fmt.Sprintf("slow-replica of service %s: app %s has %s", f.Service, app, strings.Join(topology.ServiceNames(app), ", "))
		}
		if f.Replicas >= replicas {
			return fmt.Sprintf("slow-replica %d with %d replica(s): at least one replica must stay healthy (replicas ≥ %d)", f.Replicas, replicas, f.Replicas+1)
		}
	}
	return ""
}
