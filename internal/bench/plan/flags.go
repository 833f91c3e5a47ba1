package plan

import "strings"

// Flags holds a plan as `meshbench bench` flags give it: each field is the
// flag's text, "" when the flag was not given (the default applies). Axis
// fields take comma-separated lists ("none,sidecar", "20,50"). The flag
// of each field is named in its comment; problems name it the same way.
type Flags struct {
	Name        string // --name
	Platform    string // --platform
	Seed        string // --seed
	Repetitions string // --repetitions

	Mesh      string // --mesh, e.g. "none,sidecar,ambient,waypoint"
	App       string // --app
	Rate      string // --rate, e.g. "20,50" or "max"
	LoadModel string // --load-model, e.g. "open,closed"
	Replicas  string // --replicas
	Policies  string // --policies
	Protocol  string // --protocol
	Gateway   string // --gateway, e.g. "false,true"
	MTLS      string // --mtls

	// The later axes. --connections takes one value (the plan-wide
	// connections) or a list (axes.connections).
	Payload               string // --payload, e.g. "615,1024" (axes.payload)
	ProxyThreads          string // --proxy-threads, e.g. "1,2"
	RequestsPerConnection string // --requests-per-connection, e.g. "0,1"
	Placement             string // --placement, e.g. "cross-node,same-node"
	Arrivals              string // --arrivals, e.g. "constant,poisson"

	Nodes          string // --nodes
	Duration       string // --duration, e.g. "30s"
	Warmup         string // --warmup
	Drain          string // --drain
	Connections    string // --connections
	SendTick       string // --send-tick, e.g. "1ms"
	SampleInterval string // --sample-interval
	PSSEvery       string // --pss-every
	ReuseTopology  string // --reuse-topology
	Substrate      string // --substrate (platform local)
	ControlPlane   string // --control-plane (platform local)
	Workers        string // --workers (platform kube)
	Generator      string // --generator (the generator axis)
	Fault          string // --fault (the fault axis), e.g. "none,kill:node-proxy@3s"
	Baseline       string // --baseline
	Compare        string // --compare, e.g. "mesh,policies"

	RateShortfall string // --max-rate-shortfall (thresholds.rate_shortfall)
	Errors        string // --max-errors (thresholds.errors)
	LoadCPU       string // --max-load-cpu (thresholds.load_cpu)
	Confidence    string // --confidence

	SLO             string // --slo, e.g. "p99<=5ms,errors<=0.1%" (search.slo)
	SearchFrom      string // --search-from
	SearchTo        string // --search-to
	SearchPrecision string // --search-precision, e.g. "5%"
	SearchGrowth    string // --search-growth
	SearchConfirm   string // --search-confirm
	AppConcurrency  string // --app-concurrency
	AppServiceTime  string // --app-service-time
	BodySize        string // --body-size (platform local, app static)
	AppDelay        string // --app-delay
	AppDelayDist    string // --app-delay-dist
	AppErrorRatio   string // --app-error-ratio
	AppErrorStatus  string // --app-error-status
	AppStallEvery   string // --app-stall-every
	AppStallFor     string // --app-stall-for
	AppSeed         string // --app-seed
	Hops            string // --hops, "true" or "false"
}

// FromFlags builds a plan from flag values, with the same defaults and
// checks as Parse; each problem names its flag:
// `--rate "-5": allowed: positive numbers (…) or max`.
func FromFlags(f Flags) (*Plan, error) {
	s := &source{entries: map[string]*entry{}}
	set := func(key, v string) {
		if v == "" {
			return
		}
		e := &entry{}
		if schema[settingIndex(key)].axis {
			for _, part := range strings.Split(v, ",") {
				e.items = append(e.items, item{text: strings.TrimSpace(part)})
			}
		} else {
			e.items = []item{{text: strings.TrimSpace(v)}}
		}
		s.entries[key] = e
	}
	set("name", f.Name)
	set("platform", f.Platform)
	set("seed", f.Seed)
	set("repetitions", f.Repetitions)
	set("axes.mesh", f.Mesh)
	set("axes.app", f.App)
	set("axes.rate", f.Rate)
	set("axes.load_model", f.LoadModel)
	set("axes.replicas", f.Replicas)
	set("axes.policies", f.Policies)
	set("axes.protocol", f.Protocol)
	set("axes.gateway", f.Gateway)
	set("axes.mtls", f.MTLS)
	set("nodes", f.Nodes)
	set("duration", f.Duration)
	set("warmup", f.Warmup)
	set("drain", f.Drain)
	if strings.Contains(f.Connections, ",") {
		set("axes.connections", f.Connections)
	} else {
		set("connections", f.Connections)
	}
	set("send_tick", f.SendTick)
	set("axes.payload", f.Payload)
	set("axes.proxy_threads", f.ProxyThreads)
	set("axes.requests_per_connection", f.RequestsPerConnection)
	set("axes.placement", f.Placement)
	set("axes.arrivals", f.Arrivals)
	set("sample_interval", f.SampleInterval)
	set("pss_every", f.PSSEvery)
	set("reuse_topology", f.ReuseTopology)
	set("substrate", f.Substrate)
	set("control_plane", f.ControlPlane)
	set("workers", f.Workers)
	set("axes.generator", f.Generator)
	set("axes.fault", f.Fault)
	set("baseline", f.Baseline)
	set("compare", f.Compare)
	set("thresholds.rate_shortfall", f.RateShortfall)
	set("thresholds.errors", f.Errors)
	set("thresholds.load_cpu", f.LoadCPU)
	set("confidence", f.Confidence)
	if f.SLO != "" { // one term per item, like a file's mapping
		e := &entry{}
		for _, part := range strings.Split(f.SLO, ",") {
			e.items = append(e.items, item{text: strings.TrimSpace(part)})
		}
		s.entries["search.slo"] = e
	}
	set("search.from", f.SearchFrom)
	set("search.to", f.SearchTo)
	set("search.precision", f.SearchPrecision)
	set("search.growth", f.SearchGrowth)
	set("search.confirm", f.SearchConfirm)
	set("app_concurrency", f.AppConcurrency)
	set("app_service_time", f.AppServiceTime)
	set("body_size", f.BodySize)
	set("app_delay", f.AppDelay)
	set("app_delay_dist", f.AppDelayDist)
	set("app_error_ratio", f.AppErrorRatio)
	set("app_error_status", f.AppErrorStatus)
	set("app_stall_every", f.AppStallEvery)
	set("app_stall_for", f.AppStallFor)
	set("app_seed", f.AppSeed)
	set("hops", f.Hops)
	return build(s)
}
