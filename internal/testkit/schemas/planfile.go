package schemas

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	"gopkg.in/yaml.v3"

	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/workload"
)

// PlanFileSchema is the plan file's schema in schema/: for editors (a
// YAML language server reads JSON Schema) and for tests. The plan parser
// (internal/bench/plan) stays the authority: it checks what a schema cannot
// (combinations, a baseline on the mesh axis) and words every problem; the
// schema takes every plan the parser takes.
const PlanFileSchema = "plan-file.v1.schema.json"

// durationPattern is Go's time.ParseDuration syntax ("5s", "1m30s", "500ms").
const durationPattern = `^([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*$`

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func enum(desc string, vals ...string) *jsonschema.Schema {
	s := str(desc)
	for _, v := range vals {
		s.Enum = append(s.Enum, v)
	}
	return s
}

func integer(desc string, lo, hi int) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "integer", Description: desc, Minimum: json.Number(fmt.Sprint(lo))}
	if hi > 0 {
		s.Maximum = json.Number(fmt.Sprint(hi))
	}
	return s
}

func number(desc string, lo, hi string, loOK, hiOK bool) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "number", Description: desc}
	if loOK {
		s.Minimum = json.Number(lo)
	} else {
		s.ExclusiveMinimum = json.Number(lo)
	}
	if hiOK {
		s.Maximum = json.Number(hi)
	} else {
		s.ExclusiveMaximum = json.Number(hi)
	}
	return s
}

func boolean(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: desc}
}

// duration is a Go duration string; zeroOK also takes 0 (YAML's integer).
func duration(desc string, zeroOK bool) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Pattern: durationPattern, Description: desc}
	if !zeroOK {
		return s
	}
	s.Pattern = `^0$|` + durationPattern
	return &jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{
		{Type: "string", Pattern: s.Pattern}, {Type: "integer", Const: 0}}}
}

// planKeys is the type of every plan file key (plan.Keys), in words the
// parser's problems use.
func planKeys() map[string]*jsonschema.Schema {
	localGens, kubeGens := plan.LocalGenerators, plan.Generators
	gens := union(localGens, kubeGens)
	return map[string]*jsonschema.Schema{
		"schema":      {Const: plan.FileSchema, Description: "The plan format's version; optional (a file without it is read as this version)."},
		"name":        {Type: "string", Pattern: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`, Description: "The plan's name, shown in reports."},
		"platform":    enum("local: processes on this machine (the lab); kube: a Kubernetes cluster.", plan.PlatformLocal, plan.PlatformKube),
		"seed":        {Type: "integer", Description: "The seed of the cells' random order; chosen and written into the results when absent."},
		"repetitions": integer("Runs of every configuration, interleaved in random order.", 1, plan.MaxCells),
		"axes.mesh":   enum("Mesh modes: "+onPlatforms(mesh.Names(true), mesh.Names(false))+".", union(mesh.Names(true), mesh.Names(false))...),
		"axes.app":    enum("The workload.", string(topology.AppStatic), string(topology.AppFaces)),
		"axes.rate":   {AnyOf: []*jsonschema.Schema{number("Requests per second (open model).", "0", "10000000", false, true), {Const: "max", Description: "As fast as the connections allow (closed model)."}}},
		"axes.load_model": enum("open: a constant rate, each of axes.rate; closed: every connection sends when its last answer arrives; bulk: every connection reads one endless answer (bytes per second).",
			plan.LoadOpen, plan.LoadClosed, plan.LoadBulk),
		"axes.replicas":  integer("Server replicas.", 1, 0),
		"axes.policies":  integer("ALLOW authorization rules in front of the server.", 0, topology.MaxPolicies),
		"axes.protocol":  enum("The client's protocol.", string(topology.ProtocolHTTP), string(topology.ProtocolTCP)),
		"axes.gateway":   boolean("Traffic enters through an ingress gateway (local only)."),
		"axes.mtls":      boolean("Mutual TLS between the proxies."),
		"axes.generator": enum("Load generators: "+onPlatforms(localGens, kubeGens)+".", gens...),
		"axes.fault": {Type: "string", Pattern: `^(none|(kill|cpu-limit|slow-replica|noisy-neighbour):[^@]+(@[^+]+(\+.+)?)?)$`,
			Description: "Faults inside the measured window (local only): none, kill:PART, cpu-limit:PART=MILLICORES, slow-replica:N=DELAY or noisy-neighbour:MILLICORES, then @AT and +FOR; PART is node-proxy, waypoint, sidecar or control-plane."},
		"axes.connections":             integer("Load generator connections, one cell each (instead of connections).", 1, 2147483647),
		"axes.payload":                 integer("The static app's answer in bytes, one cell each (instead of body_size).", 1, workload.MaxBodySize),
		"axes.proxy_threads":           integer("Every proxy's worker threads: Envoy's --concurrency, ztunnel's worker threads, linkerd2-proxy's cores.", 1, topology.MaxProxyThreads),
		"axes.requests_per_connection": integer("Requests per load connection before a new one: 0 keeps every connection, 1 is one per request (TCP_CRR).", 0, plan.MaxRequestsPerConnection),
		"axes.placement":               enum("Where the client runs: cross-node (a node of its own) or same-node (the app's first node; local only).", string(topology.PlacementCrossNode), string(topology.PlacementSameNode)),
		"axes.arrivals":                enum("The open loop's spacing: constant, or poisson (exponential gaps, the same mean rate).", loadgen.ArrivalsNames...),
		"nodes":                        integer("App nodes.", 1, topology.MaxAppNodes),
		"duration":                     duration("The measured window of every cell, such as 30s.", false),
		"warmup":                       duration("Load before the measured window.", true),
		"drain":                        duration("Time after the measured window before the next phase.", true),
		"connections":                  integer("Client connections.", 1, 2147483647),
		"send_tick":                    duration("The open loop's send tick of meshbench's engine, 100us to 10ms: its pacer wakes at most once per tick and sends every request due by then together (oha's is 1ms); latency still counts from each intended send time. 0 (the default): each request at its own time.", true),
		"sample_interval":              duration("Resource sampling interval.", false),
		"pss_every":                    integer("Read PSS every N sampling rounds (0: about every 5 s); local only.", 0, 2147483647),
		"reuse_topology":               boolean("Keep a topology up across the cells that share it (local only)."),
		"substrate":                    enum("auto: netns where possible; netns: network namespaces, the real ztunnel; loopback: 127.0.N.x (local only).", plan.SubstrateAuto, plan.SubstrateNetns, plan.SubstrateLoopback),
		"control_plane":                enum("who configures the lab's proxies: lab: meshbench's hand-rendered configs and its stand-in for Linkerd's control plane; istiod: the real istiod against a lab API server (sidecar, ambient and waypoint cells); linkerd: Linkerd's real controllers against a lab API server (linkerd cells); real: each mesh from its own, istiod for Istio's modes, Linkerd's controllers for linkerd (local netns only); auto: real for each mesh whose control plane is built here (root, netns), else lab.", plan.ControlPlaneLab, plan.ControlPlaneIstiod, plan.ControlPlaneLinkerd, plan.ControlPlaneReal, plan.ControlPlaneAuto),
		"workers":                      integer("Load generator pods (kube only).", 1, plan.MaxWorkers),
		"generator":                    enum("One load generator, as plans before axes.generator wrote it.", gens...),
		"baseline":                     str("The mesh mode the others are compared with; one of axes.mesh."),
		"compare":                      enum("Axes to compare along.", plan.CompareAxes...),
		"thresholds.rate_shortfall":    number("Largest rate shortfall of a valid run, a fraction such as 0.002.", "0", "1", true, false),
		"thresholds.errors":            number("Largest error ratio of a valid run, a fraction such as 0.01.", "0", "1", true, true),
		"thresholds.load_cpu":          number("Largest CPU of the load generator of a valid run, a fraction of one core.", "0", "1", false, true),
		"confidence":                   number("The confidence level asked of the intervals, such as 0.95.", "0", "1", false, false),
		"search.slo": {Description: "The capacity search's objective, such as {p99: 5ms, errors: 0.1%} or \"p99<=5ms,errors<=0.1%\".",
			AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "object", MinProperties: ptr(uint64(1)), AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}}}}}},
		"search.from": number("The search's first rate.", "0", "1e308", false, true),
		"search.to":   number("The search's highest rate.", "0", "1e308", false, true),
		"search.precision": {Description: "Stop when the bracket is this wide: a fraction such as 0.05, or 5%.",
			AnyOf: []*jsonschema.Schema{number("", "0", "1", false, false), {Type: "string", Pattern: `^[0-9]*\.?[0-9]+%$`}}},
		"search.growth":    number("Rate factor between probes before the objective fails.", "1", "10", false, true),
		"search.confirm":   boolean("Re-run the found rate to confirm it."),
		"app_concurrency":  integer("Requests each app replica serves at once (a queue beyond); 0: unbounded. Needs app_service_time.", 0, workload.MaxConcurrency),
		"app_service_time": duration("Time the app spends on each request.", true),
		"body_size":        integer("The static app's response body, bytes.", 1, workload.MaxBodySize),
		"app_delay":        duration("Fixed delay the app adds to every response.", true),
		"app_delay_dist":   str("Random delay the app adds: uniform:MIN,MAX, exp:MEAN or normal:MEAN,STDDEV (durations)."),
		"app_error_ratio":  number("Fraction of requests the app answers with app_error_status.", "0", "1", true, true),
		"app_error_status": integer("The HTTP status of the app's injected errors.", 400, 599),
		"app_stall_every":  duration("The app stalls every this long.", true),
		"app_stall_for":    duration("Each stall lasts this long.", true),
		"app_seed":         {Type: "integer", Description: "Seed of the app's random faults (0: a random seed)."},
		"hops":             boolean("Attribute latency to each hop (run --hops)."),
	}
}

// union is the values of a and b, sorted, once each.
func union(a, b []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a), b...))))
}

// onPlatforms says which values each platform takes.
func onPlatforms(local, kube []string) string {
	if slices.Equal(local, kube) {
		return strings.Join(local, ", ")
	}
	return strings.Join(local, ", ") + " on local; " + strings.Join(kube, ", ") + " on kube"
}

func ptr[T any](v T) *T { return &v }

// planFileSchema builds the plan file's schema from planKeys, nesting the
// dotted keys; an axis takes one value or a list.
func planFileSchema() (*jsonschema.Schema, error) {
	types := planKeys()
	root := &jsonschema.Schema{Version: jsonschema.Version, Type: "object", Properties: jsonschema.NewProperties(), AdditionalProperties: jsonschema.FalseSchema,
		Title:       "meshbench plan file, version 1",
		Description: "A meshbench plan (meshbench bench PLAN.yaml): the matrix of configurations and how each cell runs. Every key is optional; meshbench fills in its defaults and writes the plan back, every default filled in, as plan.yaml of the results. meshbench's parser is the authority and also checks combinations."}
	groups := map[string]*jsonschema.Schema{}
	for _, key := range plan.Keys() {
		t, ok := types[key]
		if !ok {
			return nil, fmt.Errorf("plan key %s has no type in the plan file's schema", key)
		}
		if plan.Axis(key) {
			t = &jsonschema.Schema{Description: t.Description, AnyOf: []*jsonschema.Schema{t, {Type: "array", MinItems: ptr(uint64(1)), Items: t}}}
		}
		parent, name := root, key
		if g, rest, ok := strings.Cut(key, "."); ok {
			if groups[g] == nil {
				groups[g] = &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties(), AdditionalProperties: jsonschema.FalseSchema}
				root.Properties.Set(g, groups[g])
			}
			parent, name = groups[g], rest
		}
		parent.Properties.Set(name, t)
	}
	if len(types) != len(plan.Keys()) {
		return nil, fmt.Errorf("the plan file's schema types %d keys, the plan has %d", len(types), len(plan.Keys()))
	}
	return root, nil
}

// PlanYAMLToJSON converts a plan file's YAML to the JSON document its
// schema validates (YAML's scalars as the types they resolve to).
func PlanYAMLToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]any{}
	}
	return json.Marshal(v)
}
