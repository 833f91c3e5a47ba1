package plan

import (
	"bytes"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/meshbench/meshbench/internal/workload"
)

// YAML writes the plan in canonical form, every default filled in, keys
// in schema order, its version (FileSchema) first: the plan manifest of a
// results directory. Parse reads
// it back to an equal Plan. Name is written only when set, Seed only when
// chosen (set it before writing, so the order can be replayed).
func (p *Plan) YAML() []byte {
	root := &yaml.Node{Kind: yaml.MappingNode}
	add := func(parent *yaml.Node, key string, v *yaml.Node) {
		parent.Content = append(parent.Content, str(key), v)
	}
	seq := func(vals []string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, v := range vals {
			n.Content = append(n.Content, plain(v))
		}
		return n
	}
	add(root, "schema", str(FileSchema))
	if p.Name != "" {
		add(root, "name", str(p.Name))
	}
	add(root, "platform", str(p.Platform))
	if p.Seed != nil {
		add(root, "seed", plain(strconv.FormatInt(*p.Seed, 10)))
	}
	add(root, "repetitions", plain(strconv.Itoa(p.Repetitions)))
	axes := &yaml.Node{Kind: yaml.MappingNode}
	add(axes, "mesh", seq(strs(p.Axes.Mesh)))
	add(axes, "app", seq(strs(p.Axes.App)))
	if p.Search == nil { // a search chooses its rates
		if open := p.Axes.OpenRates(); len(open) > 0 {
			add(axes, "rate", seq(rateStrs(open)))
		}
		add(axes, "load_model", seq(p.Axes.LoadModels()))
	}
	add(axes, "replicas", seq(ints(p.Axes.Replicas)))
	add(axes, "policies", seq(ints(p.Axes.Policies)))
	add(axes, "protocol", seq(strs(p.Axes.Protocol)))
	add(axes, "gateway", seq(bools(p.Axes.Gateway)))
	add(axes, "mtls", seq(bools(p.Axes.MTLS)))
	// Written only when it is not the engine alone (kube: below, as the
	// one-value key it was), so plans from before the axis read back the
	// same.
	oneGen := len(p.Axes.Generator) == 1
	if !oneGen || (p.Platform != PlatformKube && p.Axes.Generator[0] != DefaultGenerator) {
		add(axes, "generator", seq(p.Axes.Generator))
	}
	if len(p.Axes.Fault) > 0 { // written only when given: plans from before the axis read back the same
		var fs []string
		for _, f := range p.Axes.Fault {
			fs = append(fs, f.String())
		}
		add(axes, "fault", seq(fs))
	}
	// The later axes, each only when listed (plans before them read back
	// the same).
	for _, ax := range []struct {
		key  string
		vals []string
	}{{"connections", ints(p.Axes.Connections)}, {"payload", ints(p.Axes.Payload)}, {"proxy_threads", ints(p.Axes.ProxyThreads)},
		{"requests_per_connection", ints(p.Axes.RequestsPerConnection)}, {"placement", strs(p.Axes.Placement)}, {"arrivals", strs(p.Axes.Arrivals)}} {
		if len(ax.vals) > 0 {
			add(axes, ax.key, seq(ax.vals))
		}
	}
	add(root, "axes", axes)
	add(root, "nodes", plain(strconv.Itoa(p.Nodes)))
	add(root, "duration", plain(dur(p.Duration)))
	add(root, "warmup", plain(dur(p.Warmup)))
	add(root, "drain", plain(dur(p.Drain)))
	if len(p.Axes.Connections) == 0 {
		add(root, "connections", plain(strconv.Itoa(p.Connections)))
	}
	if p.SendTick > 0 { // written only when given: plans from before the key read back the same
		add(root, "send_tick", plain(dur(p.SendTick)))
	}
	add(root, "sample_interval", plain(dur(p.SampleInterval)))
	if p.Platform != PlatformKube {
		add(root, "pss_every", plain(strconv.Itoa(p.PSSEvery)))
	}
	add(root, "reuse_topology", plain(strconv.FormatBool(p.ReuseTopology)))
	if p.Platform != PlatformKube && p.Substrate != SubstrateAuto {
		// Written only when chosen: plans from before the key read back
		// the same.
		add(root, "substrate", str(p.Substrate))
	}
	if p.Platform != PlatformKube && p.ControlPlane != ControlPlaneLab {
		add(root, "control_plane", str(p.ControlPlane))
	}
	if p.Platform == PlatformKube {
		add(root, "workers", plain(strconv.Itoa(p.Workers)))
		if oneGen {
			add(root, "generator", str(p.Axes.Generator[0]))
		}
	}
	if p.Baseline != "" { // no baseline: the default reads back the same
		add(root, "baseline", str(string(p.Baseline)))
	}
	add(root, "compare", seq(p.Compare))
	th := &yaml.Node{Kind: yaml.MappingNode}
	add(th, "rate_shortfall", plain(frac(p.Thresholds.RateShortfall)))
	add(th, "errors", plain(frac(p.Thresholds.Errors)))
	add(th, "load_cpu", plain(frac(p.Thresholds.LoadCPU)))
	add(root, "thresholds", th)
	add(root, "confidence", plain(frac(p.Confidence)))
	if p.Search != nil {
		sn := &yaml.Node{Kind: yaml.MappingNode}
		add(sn, "slo", str(p.Search.Objective.String()))
		add(sn, "from", plain(frac(p.Search.Config.From)))
		add(sn, "to", plain(frac(p.Search.Config.To)))
		add(sn, "precision", plain(frac(p.Search.Config.Precision)))
		add(sn, "growth", plain(frac(p.Search.Config.Growth)))
		add(sn, "confirm", plain(strconv.FormatBool(p.Search.Config.Confirm)))
		add(root, "search", sn)
	}
	if p.AppConcurrency > 0 {
		add(root, "app_concurrency", plain(strconv.Itoa(p.AppConcurrency)))
		add(root, "app_service_time", plain(dur(p.AppServiceTime)))
	}
	if p.BodySize > 0 {
		add(root, "body_size", plain(strconv.Itoa(p.BodySize)))
	}
	addAppFaults(root, p.AppFaults)
	if p.Hops {
		add(root, "hops", plain("true"))
	}

	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root},
		HeadComment: "meshbench plan, every default filled in (internal/plan)"}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		// Only strings the plan's checks allow reach here; an encoder
		// failure is a bug.
		panic("plan: encoding YAML: " + err.Error())
	}
	_ = enc.Close()
	return buf.Bytes()
}

// str is a string scalar, quoted by the encoder when it would read as
// something else.
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// plain is a scalar written as is (numbers, durations, booleans, max).
func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

func ints(vs []int) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strconv.Itoa(v)
	}
	return out
}

func bools(vs []bool) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strconv.FormatBool(v)
	}
	return out
}

func dur(d time.Duration) string { return d.String() }

func frac(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// addAppFaults writes the apps' workload options that are set.
func addAppFaults(root *yaml.Node, f workload.Faults) {
	add := func(parent *yaml.Node, key string, v *yaml.Node) {
		parent.Content = append(parent.Content, str(key), v)
	}
	if f.Delay > 0 {
		add(root, "app_delay", plain(dur(f.Delay)))
	}
	if f.RandomDelay != nil {
		add(root, "app_delay_dist", str(f.RandomDelay.String()))
	}
	if f.ErrorRatio > 0 {
		add(root, "app_error_ratio", plain(frac(f.ErrorRatio)))
	}
	if f.ErrorStatus != 0 {
		add(root, "app_error_status", plain(strconv.Itoa(f.ErrorStatus)))
	}
	if f.StallEvery > 0 {
		add(root, "app_stall_every", plain(dur(f.StallEvery)))
		add(root, "app_stall_for", plain(dur(f.StallFor)))
	}
	if f.Seed != 0 {
		add(root, "app_seed", plain(strconv.FormatInt(f.Seed, 10)))
	}
}

func rateStrs(rs []Rate) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// SameYAML reports whether a and b are the same canonical plan (YAML's
// output), a written before the version key existed or not: a results
// directory of an earlier meshbench resumes with the plan it holds.
func SameYAML(a, b []byte) bool {
	return bytes.Equal(withoutVersion(a), withoutVersion(b))
}

// withoutVersion drops the line YAML writes the version on.
func withoutVersion(y []byte) []byte {
	line := []byte("schema: " + FileSchema + "\n")
	if i := bytes.Index(y, line); i >= 0 && (i == 0 || y[i-1] == '\n') {
		return append(y[:i:i], y[i+len(line):]...)
	}
	return y
}
