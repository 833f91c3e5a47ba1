package plan

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/fault"
)

// Cell is one run of a plan: one configuration (a combination of axis
// values) and one repetition.
type Cell struct {
	// ID names the cell, unique in its plan, readable and safe as a file
	// name ([a-z0-9.-]), the same whatever order the axes list their
	// values in:
	//
	//	MESH-APP-rRATE-xREPLICAS-pPOLICIES-PROTOCOL-ENTRY-SECURITY[-PARAMS]-repN
	//	sidecar-static-r50-x10-p4-http-pod-mtls-rep2
	//	sidecar-static-r1000-x1-p0-http-pod-mtls-c64-t2-rep1
	//
	// RATE is requests per second ("r33.3"), "rmax" (closed loop) or
	// "rbulk"; ENTRY is "pod" (the load comes from a client pod in the
	// mesh) or "gw" (through the ingress gateway); SECURITY is "mtls" or
	// "plain" (topology.Options.MTLS, which mode none ignores); N counts
	// from 1. PARAMS name the values of the axes added later, each only
	// when the plan lists that axis, so a plan without them keeps its IDs:
	// "-bBYTES" payload, "-tN" proxy threads, "-same-node"/"-cross-node"
	// placement, "-cN" connections, "-kN" requests per connection (k0:
	// kept), "-poisson"/"-constant" arrivals; then "-gNAME" for an
	// external generator. The plan-wide settings (nodes, duration, …) are
	// not in it.
	ID string
	// Config is ID without "-repN": the cells of one configuration share it.
	Config string
	// Mesh is the topology to run (LoopbackNet is left 0 for the runner);
	// its ProxyThreads and Placement are the cell's values of those axes.
	Mesh topology.Options
	// Rate is the load: requests per second, the closed loop or bulk.
	Rate Rate
	// Generator is the load generator (Axes.Generator): DefaultGenerator
	// or an external tool. IDs of cells measured by meshbench's engine
	// have no generator part, as before the axis; others end "-gNAME"
	// before "-repN".
	Generator string
	// Fault is the cell's fault (Axes.Fault), the zero Fault for none.
	// IDs of cells without one have no fault part; others end
	// "-fFAULT.ID()" before "-repN".
	Fault fault.Fault
	// Payload is the static app's answer in bytes on the payload axis; 0
	// when the plan has no such axis (Plan.BodySize applies).
	Payload int
	// Load are the cell's values of the load's own axes (connections,
	// requests per connection, arrivals); zero where the plan has none.
	Load LoadParams
	// Repetition counts the configuration's runs from 1 to Plan.Repetitions.
	Repetition int
	// TopologyKey is the same for cells that can share one running
	// topology: the same topology.Options (mode, app, replicas, policies,
	// protocol, gateway, mtls, nodes, proxy threads, placement) and
	// payload; they differ only in the load (rate, generator, connections,
	// requests per connection, arrivals) and repetition. Readable and
	// file-name safe: "sidecar-static-x10-p4-http-pod-mtls-n1".
	TopologyKey string
}

// LoadParams are a cell's values on the axes of the load that do not
// change the topology beyond rate and generator: each zero when the plan
// does not list its axis (the plan-wide setting applies).
type LoadParams struct {
	// Connections is the load generator's connections (0: Plan.Connections).
	Connections int
	// RequestsPerConnection: 0 keeps every connection, N opens a new one
	// every N requests (1: netperf's TCP_CRR).
	RequestsPerConnection int
	// Arrivals spaces an open loop's requests ("": constant).
	Arrivals loadgen.Arrivals
}

// Skip is a combination of axis values that is not a cell, at any
// repetition (see the package doc). A combination of the topology's axes
// is skipped at every load (Config ""); one of the load's axes only in
// its configuration.
type Skip struct {
	// TopologyKey is what Cell.TopologyKey would be.
	TopologyKey string
	// Config is what Cell.Config would be, "" for a whole topology.
	Config string
	Mesh   topology.Options
	// Fault, when not zero, is the fault skipped on a configuration that
	// is otherwise a cell: it means nothing there.
	Fault  fault.Fault
	Reason string
}

// The topology's axes, in the order eachTopology crosses them (mesh
// outermost): what changes the running lab.
const (
	axMesh = iota
	axApp
	axReplicas
	axPolicies
	axProtocol
	axGateway
	axMTLS
	axPayload
	axProxyThreads
	axPlacement
	nTopoAxes
)

// topo is one combination of the topology axes, with the index of each
// value in its axis (in axisKeys order; 0 for an optional axis the plan
// does not list).
type topo struct {
	o       topology.Options
	payload int
	idx     [nTopoAxes]int
}

// topoLens is the number of values eachTopology crosses on each topology
// axis: an optional axis the plan does not list counts one (its zero
// value).
func (p *Plan) topoLens() [nTopoAxes]int {
	a := &p.Axes
	return [nTopoAxes]int{len(a.Mesh), len(a.App), len(a.Replicas), len(a.Policies), len(a.Protocol), len(a.Gateway), len(a.MTLS),
		max(1, len(a.Payload)), max(1, len(a.ProxyThreads)), max(1, len(a.Placement))}
}

// eachTopology calls fn for every combination of the axes other than
// the load's, in axis order (mesh outermost), skipped ones included.
func (p *Plan) eachTopology(fn func(t topo)) {
	a := &p.Axes
	lens := p.topoLens()
	for _, n := range lens {
		if n == 0 {
			return
		}
	}
	var idx [nTopoAxes]int
	for {
		o := topology.DefaultOptions()
		o.Mode, o.App, o.Replicas, o.Policies = a.Mesh[idx[axMesh]], a.App[idx[axApp]], a.Replicas[idx[axReplicas]], a.Policies[idx[axPolicies]]
		o.Protocol, o.Gateway, o.MTLS = a.Protocol[idx[axProtocol]], a.Gateway[idx[axGateway]], a.MTLS[idx[axMTLS]]
		o.Nodes = p.Nodes
		t := topo{o: o, idx: idx}
		if len(a.Payload) > 0 {
			t.payload = a.Payload[idx[axPayload]]
		}
		if len(a.ProxyThreads) > 0 {
			t.o.ProxyThreads = a.ProxyThreads[idx[axProxyThreads]]
		}
		if len(a.Placement) > 0 {
			t.o.Placement = a.Placement[idx[axPlacement]]
		}
		fn(t)
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < lens[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// skipReason says why topology t is not a cell of p, or "" when it is
// one.
func (p *Plan) skipReason(t topo) string {
	o := t.o
	m, _ := mesh.Get(string(o.Mode))
	if m == nil {
		return ""
	}
	none := m.Kind == mesh.KindNone
	a := &p.Axes
	switch {
	case !none && !m.Plaintext && !o.MTLS:
		return "mesh " + m.Name + " with mtls false: " + m.NoPlaintext
	case none && o.Policies > 0:
		return "mesh none with policies > 0: policies need a mesh mode, none runs with policies 0"
	case m.Plaintext && !o.MTLS && o.Policies > 0:
		return "mesh " + m.Name + " with mtls false and policies > 0: the rules match the peer certificate's identity, which plaintext has not"
	case none && !o.MTLS && contains(p.Axes.MTLS, true):
		return "mesh none with mtls false: mode none has no mTLS to turn off, the same run as mtls true"
	case none && !o.Gateway && o.Protocol == topology.ProtocolTCP && contains(p.Axes.Protocol, topology.ProtocolHTTP):
		return "mesh none without a gateway with protocol tcp: no proxy treats the traffic, the same run as protocol http"
	case none && len(a.ProxyThreads) > 1 && o.ProxyThreads != a.ProxyThreads[0]:
		return fmt.Sprintf("mesh none with proxy_threads %d: no proxy, the same run as proxy_threads %d", o.ProxyThreads, a.ProxyThreads[0])
	case o.App == topology.AppFaces && len(a.Payload) > 1 && t.payload != a.Payload[0]:
		return fmt.Sprintf("app faces with payload %d: faces answers what its callers ask for, the same run as payload %d", t.payload, a.Payload[0])
	case o.Gateway && len(a.Placement) > 1 && o.Placement != a.Placement[0]:
		return fmt.Sprintf("gateway true with placement %s: the load enters through the gateway's own node, the same run as placement %s", o.Placement, a.Placement[0])
	}
	return ""
}

// loadSkipReason says why the load r, g, lp on topology t is not a cell
// of p, or "" when it is one.
func (p *Plan) loadSkipReason(t topo, r Rate, g string, lp LoadParams) string {
	external := g != "" && g != DefaultGenerator
	switch {
	case r.Bulk() && external:
		return "load_model bulk with generator " + g + ": bulk throughput is meshbench's engine's"
	case r.Bulk() && t.o.App == topology.AppFaces:
		return "load_model bulk with app faces: bulk reads the static app's endless answer"
	case r.Bulk() && lp.RequestsPerConnection > 0:
		return fmt.Sprintf("load_model bulk with requests_per_connection %d: a bulk connection carries one endless answer", lp.RequestsPerConnection)
	case lp.Arrivals == loadgen.ArrivalsPoisson && (r.Closed() || r.Bulk()):
		return "arrivals poisson with load_model " + r.String() + ": only an open loop has a schedule to space"
	case lp.Arrivals == loadgen.ArrivalsPoisson && external:
		return "arrivals poisson with generator " + g + ": the tool spaces its requests evenly"
	case lp.RequestsPerConnection > 1 && external:
		return fmt.Sprintf("requests_per_connection %d with generator %s: the tool keeps its connections or opens one per request (1)", lp.RequestsPerConnection, g)
	}
	return ""
}

// loadParams lists every combination of the load's own axes, the plan's
// zero values where it lists none.
func (p *Plan) loadParams() []LoadParams {
	a := &p.Axes
	conns, perConn, arrivals := a.Connections, a.RequestsPerConnection, a.Arrivals
	if len(conns) == 0 {
		conns = []int{0}
	}
	if len(perConn) == 0 {
		perConn = []int{0}
	}
	if len(arrivals) == 0 {
		arrivals = []loadgen.Arrivals{""}
	}
	var out []LoadParams
	for _, c := range conns {
		for _, k := range perConn {
			for _, ar := range arrivals {
				out = append(out, LoadParams{Connections: c, RequestsPerConnection: k, Arrivals: ar})
			}
		}
	}
	return out
}

// Cells returns every cell of the plan: each configuration (axis order,
// mesh outermost, rate, generator and the load's own axes innermost)
// with its repetitions 1 to Repetitions in a row. Use Order for the order
// to run them in.
func (p *Plan) Cells() []Cell {
	var cells []Cell
	p.eachTopology(func(t topo) {
		if p.skipReason(t) != "" {
			return
		}
		key := p.topologyKey(t)
		for _, r := range p.Axes.Rate {
			for _, g := range p.generators() {
				for _, lp := range p.loadParams() {
					if p.loadSkipReason(t, r, g, lp) != "" {
						continue
					}
					for _, f := range p.faults() {
						if p.faultSkip(t.o, f) != "" || faultLoadSkip(g, f) != "" {
							continue
						}
						cfg := p.configID(t, r, g, lp) + faultID(f)
						for rep := 1; rep <= p.Repetitions; rep++ {
							cells = append(cells, Cell{ID: cfg + "-rep" + strconv.Itoa(rep), Config: cfg, Mesh: t.o, Rate: r, Generator: g,
								Payload: t.payload, Load: lp, Fault: f, Repetition: rep, TopologyKey: key})
						}
					}
				}
			}
		}
	})
	return cells
}

// Skipped lists the combinations of the axes that are not cells, with why,
// in axis order: whole topologies, then the loads skipped on a topology
// that runs.
func (p *Plan) Skipped() []Skip {
	var out []Skip
	p.eachTopology(func(t topo) {
		if why := p.skipReason(t); why != "" {
			out = append(out, Skip{TopologyKey: p.topologyKey(t), Mesh: t.o, Reason: why})
			return
		}
		for _, f := range p.faults() {
			if why := p.faultSkip(t.o, f); why != "" {
				out = append(out, Skip{TopologyKey: p.topologyKey(t), Mesh: t.o, Fault: f, Reason: why})
			}
		}
		for _, r := range p.Axes.Rate {
			for _, g := range p.generators() {
				for _, lp := range p.loadParams() {
					if why := p.loadSkipReason(t, r, g, lp); why != "" {
						out = append(out, Skip{TopologyKey: p.topologyKey(t), Config: p.configID(t, r, g, lp), Mesh: t.o, Reason: why})
						continue
					}
					for _, f := range p.faults() {
						if p.faultSkip(t.o, f) != "" {
							continue // listed once for the topology above
						}
						if why := faultLoadSkip(g, f); why != "" {
							out = append(out, Skip{TopologyKey: p.topologyKey(t), Config: p.configID(t, r, g, lp) + faultID(f), Mesh: t.o, Fault: f, Reason: why})
						}
					}
				}
			}
		}
	})
	return out
}

// faultLoadSkip says why fault f means nothing with generator g: a
// fault's cost is read from meshbench's engine's intervals, which another
// tool does not write.
func faultLoadSkip(g string, f fault.Fault) string {
	if f.Zero() || g == "" || g == DefaultGenerator {
		return ""
	}
	return "fault " + f.String() + " with generator " + g + ": a fault's cost is read from meshbench's engine's intervals"
}

// faults is the fault axis, no fault alone when empty.
func (p *Plan) faults() []fault.Fault {
	if len(p.Axes.Fault) == 0 {
		return []fault.Fault{{}}
	}
	return p.Axes.Fault
}

// faultSkip says why fault f means nothing on topology o (fault.Skip),
// "" when it means something or is none.
func (p *Plan) faultSkip(o topology.Options, f fault.Fault) string {
	m, ok := mesh.Get(string(o.Mode))
	if f.Zero() || !ok {
		return ""
	}
	why := fault.SkipLab(f, m, o.App, o.Replicas, p.ControlPlane)
	if p.Platform == PlatformKube {
		why = fault.Skip(f, m, o.App, o.Replicas, false)
	}
	if why != "" {
		return "fault " + f.String() + ": " + why
	}
	return ""
}

// faultID is a cell ID's fault part: "" for none, else "-f" and the
// fault's ID.
func faultID(f fault.Fault) string {
	if f.Zero() {
		return ""
	}
	return "-f" + f.ID()
}

// generators is the generator axis, the engine alone when empty.
func (p *Plan) generators() []string {
	if len(p.Axes.Generator) == 0 {
		return []string{DefaultGenerator}
	}
	return p.Axes.Generator
}

// configID is a cell's ID without its repetition; gen "" or
// DefaultGenerator adds nothing.
func (p *Plan) configID(t topo, r Rate, gen string, lp LoadParams) string {
	id := configIDEngine(t.o, r) + p.paramsID(t, lp)
	if gen != "" && gen != DefaultGenerator {
		id += "-g" + gen
	}
	return id
}

func configIDEngine(o topology.Options, r Rate) string {
	entry, sec := "pod", "plain"
	if o.Gateway {
		entry = "gw"
	}
	if o.MTLS {
		sec = "mtls"
	}
	return fmt.Sprintf("%s-%s-r%s-x%d-p%d-%s-%s-%s", o.Mode, appOf(o), r, o.Replicas, o.Policies, protocolOf(o), entry, sec)
}

// topoParamsID names t's values of the topology's later axes the plan
// lists: payload, proxy threads, placement.
func (p *Plan) topoParamsID(t topo) string {
	a := &p.Axes
	var id string
	if len(a.Payload) > 0 {
		id += "-b" + strconv.Itoa(t.payload)
	}
	if len(a.ProxyThreads) > 0 {
		id += "-t" + strconv.Itoa(t.o.ProxyThreads)
	}
	if len(a.Placement) > 0 {
		id += "-" + string(t.o.Placement)
	}
	return id
}

// paramsID names t's and lp's values of the later axes the plan lists.
func (p *Plan) paramsID(t topo, lp LoadParams) string {
	a := &p.Axes
	id := p.topoParamsID(t)
	if len(a.Connections) > 0 {
		id += "-c" + strconv.Itoa(lp.Connections)
	}
	if len(a.RequestsPerConnection) > 0 {
		id += "-k" + strconv.Itoa(lp.RequestsPerConnection)
	}
	if len(a.Arrivals) > 0 {
		id += "-" + string(lp.Arrivals)
	}
	return id
}

// topologyKey is Cell.TopologyKey.
func (p *Plan) topologyKey(t topo) string {
	o := t.o
	entry, sec := "pod", "plain"
	if o.Gateway {
		entry = "gw"
	}
	if o.MTLS {
		sec = "mtls"
	}
	return fmt.Sprintf("%s-%s-x%d-p%d-%s-%s-%s-n%d", o.Mode, appOf(o), o.Replicas, o.Policies, protocolOf(o), entry, sec, o.Nodes) + p.topoParamsID(t)
}

func appOf(o topology.Options) topology.App {
	if o.App == "" {
		return topology.AppStatic
	}
	return o.App
}

func protocolOf(o topology.Options) topology.Protocol {
	if o.Protocol == "" {
		return topology.ProtocolHTTP
	}
	return o.Protocol
}

// orderStream is the second PCG seed word of Order: fixed, so a recorded
// seed gives the same order forever. Changing it, or Order's algorithm,
// changes the order every recorded seed stands for.
const orderStream = 0x6d65736862656e63 // "meshbenc"

// Order returns the plan's cells in the order to run them, random but
// fully determined by seed (a PCG generator from math/rand/v2, seeded with
// seed): the same plan and seed give the same order on every machine and
// whatever order the axes list their values in.
//
// Without reuseTopologies the run is a sequence of rounds, one per
// repetition; each round runs every configuration once, in its own random
// order. The repetitions of one configuration are thus spread through the
// whole run, and slow drift (a warming machine, a noisy neighbour, the
// page cache) lands on every configuration alike instead of masquerading
// as a difference between meshes.
//
// With reuseTopologies the rounds stay, but within a round the cells
// sharing a TopologyKey (same mesh options, other rates) run back to
// back, so a runner can start that topology once per round instead of
// once per cell: each round runs the topologies in its own random order,
// and each topology's cells in a random order. Drift is spread as before
// across repetitions; within a round, the rates of one topology now run
// in one stretch.
func (p *Plan) Order(seed int64, reuseTopologies bool) []Cell {
	cells := p.Cells()
	sort.Slice(cells, func(i, j int) bool { return cells[i].ID < cells[j].ID })
	rng := newOrderRNG(seed)
	out := make([]Cell, 0, len(cells))
	if !reuseTopologies {
		return append(out, rounds(rng, cells)...)
	}
	for _, round := range byRepetition(cells) {
		groups := map[string][]Cell{}
		var keys []string
		for _, c := range round {
			if groups[c.TopologyKey] == nil {
				keys = append(keys, c.TopologyKey)
			}
			groups[c.TopologyKey] = append(groups[c.TopologyKey], c)
		}
		shuffle(rng, len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for _, k := range keys {
			g := groups[k]
			shuffle(rng, len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
			out = append(out, g...)
		}
	}
	return out
}

// byRepetition splits cells (sorted by ID) into rounds, one per
// repetition, each keeping the ID order.
func byRepetition(cells []Cell) [][]Cell {
	maxRep := 0
	for _, c := range cells {
		maxRep = max(maxRep, c.Repetition)
	}
	out := make([][]Cell, maxRep)
	for _, c := range cells {
		out[c.Repetition-1] = append(out[c.Repetition-1], c)
	}
	return out
}

// newOrderRNG is Order's generator for seed.
func newOrderRNG(seed int64) *rand.PCG { return rand.NewPCG(uint64(seed), orderStream) }

// rounds orders cells (sorted by ID) by repetition, each repetition's
// cells shuffled.
func rounds(rng *rand.PCG, cells []Cell) []Cell {
	var out []Cell
	for _, r := range byRepetition(cells) {
		shuffle(rng, len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
		out = append(out, r...)
	}
	return out
}

// shuffle is Fisher–Yates on PCG's 64-bit outputs with unbiased
// rejection, spelled out here rather than taken from rand.Rand.Shuffle so
// that a recorded seed's order cannot change with the Go release.
func shuffle(rng *rand.PCG, n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		bound := uint64(i + 1)
		threshold := -bound % bound // 2^64 mod bound: outputs below it are rejected
		x := rng.Uint64()
		for x < threshold {
			x = rng.Uint64()
		}
		swap(i, int(x%bound))
	}
}

// BaselineOf returns the Config of the baseline configuration cell c is
// compared with: the same axis values with mesh Baseline, where a value
// the baseline cannot take falls back to the one its cells have (a none
// baseline has policies 0; ambient and waypoint have mtls true; none's
// duplicates fold as the package doc says). ok is false when the plan has
// no such configuration (policies 0 missing from the axis, say).
func (p *Plan) BaselineOf(c Cell) (config string, ok bool) {
	t := topo{o: c.Mesh, payload: c.Payload}
	o := &t.o
	o.Mode = p.Baseline
	m, _ := mesh.Get(string(o.Mode))
	switch {
	case m == nil:
	case m.Kind == mesh.KindNone:
		o.Policies = 0
		if !o.MTLS && contains(p.Axes.MTLS, true) {
			o.MTLS = true
		}
		if !o.Gateway && o.Protocol == topology.ProtocolTCP && contains(p.Axes.Protocol, topology.ProtocolHTTP) {
			o.Protocol = topology.ProtocolHTTP
		}
		if len(p.Axes.ProxyThreads) > 0 {
			o.ProxyThreads = p.Axes.ProxyThreads[0]
		}
	case !m.Plaintext:
		o.MTLS = true
	}
	if !contains(p.Axes.Mesh, o.Mode) || !contains(p.Axes.Policies, o.Policies) || !contains(p.Axes.MTLS, o.MTLS) ||
		!contains(p.Axes.Protocol, o.Protocol) || !contains(p.Axes.Rate, c.Rate) || p.skipReason(t) != "" ||
		p.loadSkipReason(t, c.Rate, c.Generator, c.Load) != "" || p.faultSkip(t.o, c.Fault) != "" {
		return "", false
	}
	return p.configID(t, c.Rate, c.Generator, c.Load) + faultID(c.Fault), true
}

// CellOverheadLocal is what a local-lab cell costs beyond its warm-up,
// measured window and drain: starting a small lab (~0.4 s), waiting for it
// to be idle (≥ 2 s: one-second sampling rounds) and stopping it, as
// bench/lab measured on 2 cores. Large sidecar labs take longer to start
// (up to ~20 s for 90 sidecars).
const CellOverheadLocal = 3 * time.Second

// CellOverheadKube is a kube cell's cost beyond its warm-up, measured
// window and drain, at the least: applying the app and waiting for it,
// the idle gate (at least one fresh metrics sample: one period), the load
// Job's pods starting, and deleting the namespaces. A mesh install (the
// first cell of a mesh) and image pulls come on top.
const CellOverheadKube = 45 * time.Second

// CellOverhead is the platform's CellOverhead….
func (p *Plan) CellOverhead() time.Duration {
	if p.Platform == PlatformKube {
		return CellOverheadKube + p.SampleInterval
	}
	return CellOverheadLocal
}

// Estimate is the plan's expected wall time when every cell costs
// overhead beyond its warm-up, duration and drain (CellOverheadLocal for
// the local lab).
func (p *Plan) Estimate(overhead time.Duration) time.Duration {
	drain := p.Drain
	if p.Platform == PlatformKube {
		// A maximum: the drain ends once a fresh sample shows the app
		// idle, about two metrics periods after the load.
		drain = min(drain, 2*p.SampleInterval)
	}
	return time.Duration(len(p.Cells())) * (p.Warmup + p.Duration + drain + overhead)
}
