package plan

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/workload"
)

// maxTopologyScan bounds the combinations build enumerates before it gives
// up counting: beyond it the plan is far above MaxCells anyway.
const maxTopologyScan = 1_000_000

// builder reads a source into a Plan, recording every problem.
type builder struct {
	s *source
	p *Plan
	// lines[key][i] is the line of the i-th value kept on axis key.
	lines map[string][]int
	// axisBad: some value of some axis was rejected.
	axisBad bool
	nodesOK bool
}

// build checks s and returns the plan, or every problem.
func build(s *source) (*Plan, error) {
	b := &builder{s: s, p: Defaults(), lines: map[string][]int{}, nodesOK: true}
	b.scalars()
	b.search()
	b.appFaults()
	b.hops()
	b.axes()
	b.laterAxes()
	b.bodySize()
	b.loadModel()
	b.sendTick()
	b.compare()
	b.matrix()
	if err := s.ps.err(); err != nil {
		return nil, err
	}
	return b.p, nil
}

// bodySize reads body_size, once the app axis is known.
func (b *builder) bodySize() {
	p := b.p
	b.integer("body_size", 1, workload.MaxBodySize, fmt.Sprintf("allowed: 1 to %d bytes (the static app's answer)", workload.MaxBodySize), &p.BodySize)
	if it, ok := b.one("body_size"); ok && p.BodySize > 0 {
		switch {
		case slices.Contains(p.Axes.App, topology.AppFaces):
			b.s.badItem("body_size", it, "applies to the static app only (faces answers what its callers ask for): drop faces from axes.app")
			p.BodySize = 0
		}
	}
}

// sendTick reads send_tick, once the rates, load models and generators
// are known: it applies to the open-loop cells of meshbench's engine, so
// a plan with none of them is refused rather than run without it.
func (b *builder) sendTick() {
	it, ok := b.one("send_tick")
	if !ok {
		return
	}
	want := fmt.Sprintf("allowed: 0 (each request at its own time) or a duration from %v to %v such as 1ms", loadgen.MinSendTick, loadgen.MaxSendTick)
	d, err := time.ParseDuration(it.text)
	if err != nil || loadgen.ValidateSendTick(d) != nil {
		b.s.badItem("send_tick", it, want)
		return
	}
	if d == 0 || b.axisBad {
		return
	}
	open := slices.ContainsFunc(b.p.Axes.Rate, Rate.open) || b.p.Search != nil
	engine := slices.ContainsFunc(b.p.Axes.Generator, func(g string) bool { return g == "" || g == DefaultGenerator })
	switch {
	case !open:
		b.s.badItem("send_tick", it, "applies to an open loop's schedule: this plan has no open-loop rate (axes.rate max and load_model closed or bulk have none)")
	case !engine:
		b.s.badItem("send_tick", it, "applies to meshbench's own engine: axes.generator has only external tools, which pace by themselves")
	default:
		b.p.SendTick = d
	}
}

// one returns the single value given for a scalar setting.
func (b *builder) one(key string) (item, bool) {
	e := b.s.entries[key]
	if e == nil || len(e.items) == 0 {
		return item{}, false
	}
	return e.items[0], true
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func (b *builder) scalars() {
	p := b.p
	if it, ok := b.one("schema"); ok && it.text != FileSchema {
		b.s.badItem("schema", it, "allowed: "+FileSchema+" (the plan format this meshbench reads), or no schema key")
	}
	if it, ok := b.one("name"); ok {
		if it.text != "" && !nameRE.MatchString(it.text) {
			b.s.badItem("name", it, "allowed: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters")
		} else {
			p.Name = it.text
		}
	}
	if it, ok := b.one("platform"); ok {
		switch it.text {
		case PlatformLocal, PlatformKube:
			p.Platform = it.text
		default:
			b.s.badItem("platform", it, "allowed: local (processes on this machine), kube (a Kubernetes cluster)")
		}
	}
	kube := p.Platform == PlatformKube
	if it, ok := b.one("seed"); ok {
		v, err := strconv.ParseInt(it.text, 10, 64)
		if err != nil {
			b.s.badItem("seed", it, "allowed: a whole number from -9223372036854775808 to 9223372036854775807")
		} else {
			p.Seed = &v
		}
	}
	b.integer("repetitions", 1, MaxCells, fmt.Sprintf("allowed: a whole number from 1 to %d", MaxCells), &p.Repetitions)
	if it, ok := b.one("nodes"); ok {
		want := fmt.Sprintf("allowed: 1 to %d app nodes", topology.MaxAppNodes)
		n, err := strconv.Atoi(it.text)
		if err != nil {
			b.s.badItem("nodes", it, want)
			b.nodesOK = false
		} else {
			o := topology.DefaultOptions()
			o.Nodes = n
			if errs := optionErrors(o.Validate(), "nodes"); len(errs) > 0 {
				for _, e := range errs {
					b.s.bad("nodes", it.line, e.Value, e.Want)
				}
				b.nodesOK = false
			} else {
				p.Nodes = n
			}
		}
	}
	b.duration("duration", false, &p.Duration)
	b.duration("warmup", true, &p.Warmup)
	b.duration("drain", true, &p.Drain)
	b.integer("connections", 1, math.MaxInt32, "allowed: a whole number, 1 or more", &p.Connections)
	b.duration("sample_interval", false, &p.SampleInterval)
	b.integer("pss_every", 0, math.MaxInt32, "allowed: 0 (about every 5 s) or a whole number N, every N sampling rounds", &p.PSSEvery)
	if it, ok := b.one("reuse_topology"); ok {
		v, ok := parseBool(it.text)
		switch {
		case !ok:
			b.s.badItem("reuse_topology", it, "allowed: true, false")
		case v && kube:
			b.s.badItem("reuse_topology", it, "allowed on platform kube: false (every cell deploys its app and deletes it)")
		default:
			p.ReuseTopology = v
		}
	}
	if it, ok := b.one("substrate"); ok {
		switch {
		case it.text != SubstrateAuto && it.text != SubstrateNetns && it.text != SubstrateLoopback:
			b.s.badItem("substrate", it, "allowed: auto, netns (network namespaces, the real ztunnel), loopback (127.0.N.x, Envoy standing in for ztunnel)")
		case kube:
			b.s.badItem("substrate", it, "only on platform local (a cluster brings its own network)")
		default:
			p.Substrate = it.text
		}
	}
	if it, ok := b.one("control_plane"); ok {
		switch {
		case !slices.Contains([]string{ControlPlaneLab, ControlPlaneIstiod, ControlPlaneLinkerd, ControlPlaneReal, ControlPlaneAuto}, it.text):
			b.s.badItem("control_plane", it, "allowed: lab (meshbench renders the sidecars' and ztunnels' configs, its stand-in serves Linkerd's proxies), istiod (the real istiod against a lab API server; netns substrate), linkerd (Linkerd's real controllers against a lab API server; netns substrate), real (each mesh from its own: istiod for Istio's modes, Linkerd's controllers for linkerd; netns substrate), auto (real for each mesh whose control plane is built here, as root on netns; else lab)")
		case kube:
			b.s.badItem("control_plane", it, "only on platform local (a cluster runs the mesh's own control plane)")
		default:
			p.ControlPlane = it.text
		}
	}
	b.integer("workers", 1, MaxWorkers, fmt.Sprintf("allowed: 1 to %d load generator pods", MaxWorkers), &p.Workers)
	if kube {
		// The kube platform's own defaults, and what it does not take.
		if b.s.entries["reuse_topology"] == nil {
			p.ReuseTopology = false
		}
		if b.s.entries["sample_interval"] == nil {
			p.SampleInterval = DefaultKubeSampleInterval
		}
		if b.s.entries["drain"] == nil {
			p.Drain = KubeDrain(p.SampleInterval)
		}
		if it, ok := b.one("pss_every"); ok {
			b.s.badItem("pss_every", it, "only on platform local (the kube platform reads the working set from metrics.k8s.io)")
		}
	} else {
		if it, ok := b.one("workers"); ok {
			b.s.badItem("workers", it, "only on platform kube (the local lab runs one load generator)")
		}
	}
	if it, ok := b.one("baseline"); ok {
		p.Baseline = topology.Mode(it.text) // checked against the mesh axis in matrix
	}
	b.fraction("thresholds.rate_shortfall", 0, 1, true, false, "allowed: a fraction from 0 to below 1, such as 0.002", &p.Thresholds.RateShortfall)
	b.fraction("thresholds.errors", 0, 1, true, true, "allowed: a fraction from 0 to 1, such as 0.01", &p.Thresholds.Errors)
	b.fraction("thresholds.load_cpu", 0, 1, false, true, "allowed: a fraction of one core above 0, at most 1, such as 0.9", &p.Thresholds.LoadCPU)
	b.fraction("confidence", 0, 1, false, false, "allowed: a fraction between 0 and 1 (both excluded), such as 0.95", &p.Confidence)
}

func (b *builder) integer(key string, lo, hi int, want string, dst *int) {
	it, ok := b.one(key)
	if !ok {
		return
	}
	v, err := strconv.Atoi(it.text)
	if err != nil || v < lo || v > hi {
		b.s.badItem(key, it, want)
		return
	}
	*dst = v
}

func (b *builder) duration(key string, zeroOK bool, dst *time.Duration) {
	it, ok := b.one(key)
	if !ok {
		return
	}
	d, err := time.ParseDuration(it.text)
	switch {
	case err != nil || d < 0 || (d == 0 && !zeroOK):
		want := "allowed: a duration above 0 such as 30s or 1m30s"
		if zeroOK {
			want = "allowed: a duration of 0 or more such as 0s, 2s or 500ms"
		}
		b.s.badItem(key, it, want)
	default:
		*dst = d
	}
}

func (b *builder) fraction(key string, lo, hi float64, loOK, hiOK bool, want string, dst *float64) {
	it, ok := b.one(key)
	if !ok {
		return
	}
	v, err := strconv.ParseFloat(it.text, 64)
	inLo := v > lo || (loOK && v == lo)
	inHi := v < hi || (hiOK && v == hi)
	if err != nil || !inLo || !inHi { // NaN fails both comparisons
		b.s.badItem(key, it, want)
		return
	}
	*dst = v
}

// optionErrors returns the *topology.OptionError of err about field.
func optionErrors(err error, field string) []*topology.OptionError {
	var out []*topology.OptionError
	for _, e := range unjoin(err) {
		var oe *topology.OptionError
		if errors.As(e, &oe) && oe.Field == field {
			out = append(out, oe)
		}
	}
	return out
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// axis reads the values of axis key: parse returns a value's canonical
// text (for duplicates) and whether it is good, recording its own
// problems; add keeps it.
func (b *builder) axis(key string, parse func(it item) (canon string, ok bool), reset func(), add func(it item)) {
	e := b.s.entries[key]
	if e == nil {
		n := b.axisLen(key)
		for range n {
			b.lines[key] = append(b.lines[key], b.s.lineOf(key))
		}
		return
	}
	reset()
	first := map[string]int{}
	for _, it := range e.items {
		canon, ok := parse(it)
		if !ok {
			b.axisBad = true
			continue
		}
		if l, dup := first[canon]; dup {
			want := "given twice"
			if l > 0 && l != it.line {
				want = fmt.Sprintf("given twice (first on line %d)", l)
			}
			b.s.badItem(key, it, want)
			b.axisBad = true
			continue
		}
		first[canon] = it.line
		add(it)
		b.lines[key] = append(b.lines[key], it.line)
	}
}

// axisLen is the number of values of axis key in the plan.
func (b *builder) axisLen(key string) int {
	a := &b.p.Axes
	switch key {
	case "axes.mesh":
		return len(a.Mesh)
	case "axes.app":
		return len(a.App)
	case "axes.rate":
		return len(a.Rate)
	case "axes.replicas":
		return len(a.Replicas)
	case "axes.policies":
		return len(a.Policies)
	case "axes.protocol":
		return len(a.Protocol)
	case "axes.gateway":
		return len(a.Gateway)
	case "axes.mtls":
		return len(a.MTLS)
	case "axes.generator", "generator":
		return len(a.Generator)
	case "axes.fault":
		return len(a.Fault)
	case "axes.connections":
		return len(a.Connections)
	case "axes.payload":
		return len(a.Payload)
	case "axes.proxy_threads":
		return len(a.ProxyThreads)
	case "axes.requests_per_connection":
		return len(a.RequestsPerConnection)
	case "axes.placement":
		return len(a.Placement)
	case "axes.arrivals":
		return len(a.Arrivals)
	}
	return 0
}

// viaValidate checks one axis value with topology.Options.Validate: o is the
// default options with that value set; the problems about field are the
// value's.
func (b *builder) viaValidate(key string, it item, o topology.Options, field, allowed string) bool {
	if it.text == "" { // "" means a default to mesh.Options, not here
		b.s.badItem(key, it, "allowed: "+allowed)
		return false
	}
	errs := optionErrors(o.Validate(), field)
	for _, e := range errs {
		b.s.bad(key, it.line, e.Value, e.Want)
	}
	return len(errs) == 0
}

func (b *builder) axes() {
	a := &b.p.Axes
	kube := b.p.Platform == PlatformKube
	b.axis("axes.mesh", func(it item) (string, bool) {
		if kube {
			if _, ok := mesh.Get(it.text); ok {
				return it.text, true
			}
			b.s.badItem("axes.mesh", it, mesh.Allowed(false))
			return it.text, false
		}
		o := topology.DefaultOptions()
		o.Mode = topology.Mode(it.text)
		return it.text, b.viaValidate("axes.mesh", it, o, "mode", "none, sidecar, ambient, waypoint, linkerd")
	}, func() { a.Mesh = nil }, func(it item) { a.Mesh = append(a.Mesh, topology.Mode(it.text)) })

	b.axis("axes.app", func(it item) (string, bool) {
		o := topology.DefaultOptions()
		o.App = topology.App(it.text)
		return it.text, b.viaValidate("axes.app", it, o, "app", "static, faces")
	}, func() { a.App = nil }, func(it item) { a.App = append(a.App, topology.App(it.text)) })

	var parsed Rate // the item parse just read, for add
	b.axis("axes.rate", func(it item) (string, bool) {
		r, ok := parseRate(it.text)
		if !ok {
			b.s.badItem("axes.rate", it, rateAllowed)
		}
		parsed = r
		return r.String(), ok
	}, func() { a.Rate = nil }, func(it item) { a.Rate = append(a.Rate, parsed) })

	b.axis("axes.replicas", func(it item) (string, bool) {
		n, err := strconv.Atoi(it.text)
		if err != nil {
			b.s.badItem("axes.replicas", it, "allowed: a whole number, 1 or more")
			return "", false
		}
		// The bound for the plan's nodes and apps is checked per
		// combination; here only what no number of nodes can fix.
		o := topology.DefaultOptions()
		o.Replicas, o.Nodes = n, topology.MaxAppNodes
		return strconv.Itoa(n), b.viaValidate("axes.replicas", it, o, "replicas", "")
	}, func() { a.Replicas = nil }, func(it item) { n, _ := strconv.Atoi(it.text); a.Replicas = append(a.Replicas, n) })

	b.axis("axes.policies", func(it item) (string, bool) {
		n, err := strconv.Atoi(it.text)
		if err != nil || n < 0 || n > topology.MaxPolicies {
			// topology.Options.Validate's words; the rest of its policy
			// checks depend on the combination.
			b.s.badItem("axes.policies", it, fmt.Sprintf("allowed: 0 to %d ALLOW rules", topology.MaxPolicies))
			return "", false
		}
		return strconv.Itoa(n), true
	}, func() { a.Policies = nil }, func(it item) { n, _ := strconv.Atoi(it.text); a.Policies = append(a.Policies, n) })

	b.axis("axes.protocol", func(it item) (string, bool) {
		o := topology.DefaultOptions()
		o.Protocol = topology.Protocol(it.text)
		return it.text, b.viaValidate("axes.protocol", it, o, "protocol", "http, tcp")
	}, func() { a.Protocol = nil }, func(it item) { a.Protocol = append(a.Protocol, topology.Protocol(it.text)) })

	for _, k := range []struct {
		key string
		dst *[]bool
	}{{"axes.gateway", &a.Gateway}, {"axes.mtls", &a.MTLS}} {
		b.axis(k.key, func(it item) (string, bool) {
			v, ok := parseBool(it.text)
			if !ok {
				b.s.badItem(k.key, it, "allowed: true or false")
			}
			if ok && v && kube && k.key == "axes.gateway" {
				b.s.badItem(k.key, it, "allowed on platform kube: false (no ingress gateway there yet)")
				ok = false
			}
			return strings.ToLower(it.text), ok
		}, func() { *k.dst = nil }, func(it item) { v, _ := parseBool(it.text); *k.dst = append(*k.dst, v) })
	}
	// The generator axis: axes.generator, or the one value of the
	// top-level generator key that plans wrote before it.
	gkey := "axes.generator"
	if b.s.entries[gkey] == nil && b.s.entries["generator"] != nil {
		gkey = "generator"
		if e := b.s.entries["generator"]; len(e.items) != 1 {
			b.s.bad("generator", e.line, "", "one generator; list several under axes.generator")
		}
	} else if it, ok := b.one("generator"); ok {
		b.s.badItem("generator", it, "given with axes.generator: remove it and list the generators under axes.generator")
	}
	gens, where := LocalGenerators, "on platform local"
	if kube {
		gens, where = Generators, "on platform kube (meshbench's image)"
	}
	b.axis(gkey, func(it item) (string, bool) {
		g := strings.ToLower(it.text)
		if !slices.Contains(gens, g) {
			b.s.badItem(gkey, it, "allowed "+where+": "+strings.Join(gens, ", "))
			return g, false
		}
		if b.p.Search != nil && g != DefaultGenerator {
			b.s.badItem(gkey, it, "a capacity search runs meshbench's own engine (it judges the engine's schedule lag); remove the generator or the search")
			return g, false
		}
		return g, true
	}, func() { a.Generator = nil }, func(it item) { a.Generator = append(a.Generator, strings.ToLower(it.text)) })

	var f fault.Fault // the item parse just read, for add
	b.axis("axes.fault", func(it item) (string, bool) {
		var err error
		if f, err = fault.Parse(it.text); err != nil {
			b.s.badItem("axes.fault", it, strings.TrimPrefix(err.Error(), fmt.Sprintf("fault %q: ", strings.TrimSpace(it.text))))
			return it.text, false
		}
		switch {
		case f.Zero():
		case b.p.Search != nil:
			b.s.badItem("axes.fault", it, "a capacity search runs without faults; remove the fault or the search")
			return f.String(), false
		case b.p.Duration > 0 && f.Check(b.p.Duration) != nil:
			b.s.badItem("axes.fault", it, fmt.Sprintf("allowed: @AT inside the %s measured window (duration)", b.p.Duration))
			return f.String(), false
		case b.p.ControlPlane == ControlPlaneAuto && f.Part == mesh.PartControlPlane:
			// Which cells it skips depends on the control plane each
			// mesh gets, known only when the plan starts.
			b.s.badItem("axes.fault", it, "a fault on the control plane with control_plane auto: not allowed (whether it runs depends on what auto picks); use control_plane real, or lab, which skips it")
			return f.String(), false
		}
		return f.String(), true
	}, func() { a.Fault = nil }, func(item) { a.Fault = append(a.Fault, f) })
}

func parseBool(s string) (v, ok bool) {
	switch strings.ToLower(s) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// axisKeys are the topology's axes in topo.idx order.
var axisKeys = [nTopoAxes]string{"axes.mesh", "axes.app", "axes.replicas", "axes.policies", "axes.protocol", "axes.gateway", "axes.mtls",
	"axes.payload", "axes.proxy_threads", "axes.placement"}

// fieldAxis maps a topology.OptionError field to the index of its axis in
// topo.idx.
var fieldAxis = map[string]int{"mode": axMesh, "app": axApp, "replicas": axReplicas, "policies": axPolicies, "protocol": axProtocol,
	"gateway": axGateway, "mtls": axMTLS, "proxy_threads": axProxyThreads, "placement": axPlacement}

// matrix checks the combinations: baseline, skipped and unused values,
// the cell count, and topology.Options.Validate for every topology.
func (b *builder) matrix() {
	p, s := b.p, b.s
	a := &p.Axes
	if len(a.Mesh) > 0 && !contains(a.Mesh, p.Baseline) {
		if s.entries["baseline"] == nil {
			// The default (none) never refuses the plan: without none
			// there is no baseline, and the meshes are compared with each
			// other and along the plan's other axes.
			p.Baseline = ""
		} else {
			modes := make([]string, len(a.Mesh))
			for i, m := range a.Mesh {
				modes[i] = string(m)
			}
			s.bad("baseline", s.lineOf("baseline"), strconv.Quote(string(p.Baseline)), "allowed: one of "+s.field("axes.mesh")+" ("+strings.Join(modes, ", ")+")")
		}
	}
	if len(a.Mesh) == 0 || len(a.App) == 0 || len(a.Rate) == 0 || len(a.Replicas) == 0 ||
		len(a.Policies) == 0 || len(a.Protocol) == 0 || len(a.Gateway) == 0 || len(a.MTLS) == 0 {
		return // every value of an axis was rejected, and said so
	}
	if !b.nodesOK {
		return
	}

	raw := 1
	for _, n := range p.topoLens() {
		raw = satMul(raw, n)
	}
	axesLine := s.lineOf(keyAxes)
	if s.axesLine > 0 {
		axesLine = s.axesLine
	}
	if raw > maxTopologyScan {
		s.bad(keyAxes, axesLine, "", fmt.Sprintf("expands to far more than %d cells; allowed: at most %d", MaxCells, MaxCells))
		return
	}

	var kept []topo
	var reasons []string
	var used [nTopoAxes][]bool
	var unusedWhy [nTopoAxes][][]string // the skip reasons met by each value
	lens := p.topoLens()
	for k := range used {
		used[k] = make([]bool, lens[k])
		unusedWhy[k] = make([][]string, len(used[k]))
	}
	p.eachTopology(func(t topo) {
		if why := p.skipReason(t); why != "" {
			if !contains(reasons, why) {
				reasons = append(reasons, why)
			}
			for k, i := range t.idx {
				if !used[k][i] && !contains(unusedWhy[k][i], why) {
					unusedWhy[k][i] = append(unusedWhy[k][i], why)
				}
			}
			return
		}
		kept = append(kept, t)
		for k, i := range t.idx {
			used[k][i] = true
		}
	})
	if len(kept) == 0 {
		if !b.axisBad {
			s.bad(keyAxes, axesLine, "", "the plan expands to no cells: every combination is skipped ("+strings.Join(reasons, "; ")+")")
		}
		return
	}
	for k := range used {
		if b.axisLen(axisKeys[k]) == 0 {
			continue // an optional axis the plan does not list
		}
		for i, u := range used[k] {
			if !u {
				s.bad(axisKeys[k], b.lines[axisKeys[k]][i], b.axisValue(k, i), "no cell has it: "+strings.Join(unusedWhy[k][i], "; "))
			}
		}
	}
	configs := satMul(satMul(satMul(len(kept), len(a.Rate)), len(p.generators())), len(p.loadParams()))
	cells := satMul(configs, p.Repetitions)
	if cells > MaxCells {
		s.bad(keyAxes, axesLine, "", fmt.Sprintf("expands to %d cells (%d configurations × %d repetitions); allowed: at most %d",
			cells, configs, p.Repetitions, MaxCells))
		return
	}
	b.loadMatrix(kept)
	for _, t := range kept {
		for _, e := range unjoin(validOptions(t.o)) {
			var oe *topology.OptionError
			if !errors.As(e, &oe) {
				s.bad(keyAxes, axesLine, "", e.Error())
				continue
			}
			if k, ok := fieldAxis[oe.Field]; ok {
				s.bad(axisKeys[k], b.lines[axisKeys[k]][t.idx[k]], oe.Value, oe.Want)
			} else if oe.Field == "nodes" {
				s.bad("nodes", s.lineOf("nodes"), oe.Value, oe.Want)
			} else {
				s.bad(keyAxes, axesLine, "", e.Error())
			}
		}
	}
}

// validOptions checks o with topology.Options.Validate, a mode with no local
// form by the rules of the local mode it follows (mesh.Rules: Linkerd's
// options are a sidecar mesh's).
func validOptions(o topology.Options) error {
	o.Mode = topology.Mode(mesh.Rules(string(o.Mode)))
	return o.Validate()
}

// axisValue shows the i-th value of axis k as a problem quotes it.
func (b *builder) axisValue(k, i int) string {
	a := &b.p.Axes
	switch k {
	case 0:
		return strconv.Quote(string(a.Mesh[i]))
	case 1:
		return strconv.Quote(string(a.App[i]))
	case 2:
		return strconv.Itoa(a.Replicas[i])
	case 3:
		return strconv.Itoa(a.Policies[i])
	case 4:
		return strconv.Quote(string(a.Protocol[i]))
	case 5:
		return strconv.FormatBool(a.Gateway[i])
	case axMTLS:
		return strconv.FormatBool(a.MTLS[i])
	case axPayload:
		return strconv.Itoa(a.Payload[i])
	case axProxyThreads:
		return strconv.Itoa(a.ProxyThreads[i])
	case axPlacement:
		return strconv.Quote(string(a.Placement[i]))
	}
	return ""
}

// satMul multiplies non-negative a and b, saturating at math.MaxInt.
func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}
