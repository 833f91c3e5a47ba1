package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/results"
)

// SMPVersion is the smp_version meshbench writes: the version string
// Meshery's SMP examples carry (mesheryctl's test configurations say
// "smp_version: v0.0.1"); the protos themselves define no version value.
const SMPVersion = "v0.0.1"

// SMPResult renders one cell as Service Mesh Performance (SMP) messages,
// as indented JSON that parses strictly with the upstream SMP protos. It is
// an export of valid SMP messages, not an import path into a tool: Meshery's
// SMP input re-runs a test instead of importing results, and its decoder
// rejects enum names.
//
// Spec followed: github.com/service-mesh-performance/service-mesh-performance,
// protos/service_mesh_performance.proto (with service_mesh.proto and
// metadata.proto) at commit 290495f2a9127122037754471b60bf8850c1fbbd, the
// latest we could read; an older layout (layer5io, package SMPS, camelCase
// actual_QPS/testId) is not followed. SMP splits a test into four messages
// linked by id, so the document is an object holding one of each, under the
// messages' snake_case names: performance_test_result (its test_id,
// mesh_config_id and env_id name the other three), performance_test_config,
// service_mesh_config and environment_config. Each part uses the proto
// field names (protojson's UseProtoNames form, which protojson parsers
// accept), enums by name, timestamps as RFC 3339 in UTC, and 64-bit
// integers as JSON numbers (protojson writes them as strings but reads
// both). Ids are "<cellID>" for the result and "<cellID>/test",
// "<cellID>/mesh", "<cellID>/env" for the rest.
//
// The mapping:
//   - result: start_time and end_time are the measured window (load.json
//     started_at/ended_at, warm-up excluded); latencies_ms holds min (p0 of
//     the merged HDR histogram), average, p50, p90, p99 and max, equal to
//     analysis.ReadCell's figures, latencies from the intended send time;
//     actual_qps is the achieved rate (sent / attack duration); details_uri
//     is the cell's directory relative to the plan results directory.
//   - result labels carry what SMP has no field for: request counts
//     (meshbench.requests.scheduled/sent/completed/success/dropped/canceled),
//     status codes (meshbench.status.<code>), errors (meshbench.error.<kind>:
//     count and message), the latency spectrum (meshbench.latency_ms.p<pct>
//     at analysis.SpectrumPercentiles: SMP has no percentile list), and
//     whether the cell is valid and why not.
//   - test config: one client, load_generator "meshbench <version>",
//     protocol (h2 is PROTOCOL_HTTP, labelled), connections, rps (the
//     schedule's rate; 0 for a closed loop, which has none), endpoint_urls,
//     additional_options (model, warm-up, timeout, queue); duration as a Go
//     duration ("2s"); name and labels give the scenario.
//   - mesh config: mode none has no mesh_type (SMP's enum has no "no mesh";
//     labelled meshbench.mode "none", "no mesh"); sidecar, ambient and
//     waypoint are mesh_type ISTIO with labels istio.mode sidecar/ambient
//     (+ waypoint), linkerd is mesh_type LINKERD (each mesh's descriptor in
//     internal/mesh says which); a run of the local lab adds an annotation
//     saying it is meshbench's local Envoy emulation of that Istio data
//     plane, not Istio itself (a cluster's run is the real mesh and has
//     none); mesh_type.version is empty, proxy_build is the Envoy version
//     and mesh_build meshbench's. mtls_enabled is the scenario's mTLS (false
//     without a mesh). sidecar (a sidecar mesh) and ingress_gateway (with a
//     gateway) hold count, cpu_mcores and mem_mb of those proxies.
//   - environment: one node (the host: CPU model, cores, memory in MB; the
//     local lab's "nodes" are loopback addresses on it), labels for platform,
//     hostname, kernel, OS and architecture, and individual_workloads: one
//     per measured component with its process count, average CPU (mcores)
//     and memory.
//
// Units: SMP's CPU fields are whole millicores and its memory fields whole
// MB (10^6 bytes): meshbench's averages are rounded and converted from MiB.
// SMP int32 fields have no "unset" value: memory is written only when PSS
// was measured (otherwise mem_mb is absent, which reads as 0).
//
// Not filled, and why: host CPU, memory and swap (PerformanceTestResult
// declares CPU, Memory and Swap messages but no field of those types, so
// they cannot be attached);
// sidecar.rps/bps, ingress_gateway.rps/bps and the mesh_telemetry,
// mesh_policy and mesh_control_plane blocks (the local lab has no control
// plane, telemetry or policy pods; per-proxy traffic is not recorded);
// proxy_concurrency (not recorded in the results); exp_group_uuid, exp_uuid
// and profile (Meshery's own bookkeeping); egress gateway (no field in
// ServiceMeshConfig); client headers, cookies, body, content_type and
// ssl_certificate (meshbench sends plain GETs; the CA is per run);
// client.internal (the spec does not define it); application_metadata and
// traffic_metadata (Helm/CNAB and load-balancer details have no local
// equivalent); kubernetes_version (local platform).
func SMPResult(cell *analysis.Cell, run *results.RunManifest, load *results.LoadResult) ([]byte, error) {
	if cell == nil || run == nil || load == nil {
		return nil, fmt.Errorf("smp: cell, run manifest and load result are all needed")
	}
	id := cell.ID
	doc := smpDoc{
		Result: smpResult{
			SMPVersion:   SMPVersion,
			ID:           id,
			Labels:       resultLabels(cell, load),
			StartTime:    smpTime(load.StartedAt),
			EndTime:      smpTime(load.EndedAt),
			Latencies:    latencies(cell),
			ActualQPS:    cell.Figures[analysis.AchievedRate],
			DetailsURI:   results.CellsDir + "/" + id,
			TestID:       id + "/test",
			MeshConfigID: id + "/mesh",
			EnvID:        id + "/env",
		},
		Test: testConfig(cell, run, load),
		Mesh: meshConfig(cell, run),
		Env:  envConfig(cell, run),
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("smp: %w", err)
	}
	return append(b, '\n'), nil
}

type smpDoc struct {
	Result smpResult     `json:"performance_test_result"`
	Test   smpTestConfig `json:"performance_test_config"`
	Mesh   smpMeshConfig `json:"service_mesh_config"`
	Env    smpEnvConfig  `json:"environment_config"`
}

type smpLatency struct {
	Min     float64 `json:"min"`
	Average float64 `json:"average"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
}

type smpResult struct {
	SMPVersion   string            `json:"smp_version"`
	ID           string            `json:"id"`
	Labels       map[string]string `json:"labels,omitempty"`
	StartTime    string            `json:"start_time,omitempty"`
	EndTime      string            `json:"end_time,omitempty"`
	Latencies    *smpLatency       `json:"latencies_ms,omitempty"`
	ActualQPS    float64           `json:"actual_qps"`
	DetailsURI   string            `json:"details_uri"`
	TestID       string            `json:"test_id"`
	MeshConfigID string            `json:"mesh_config_id"`
	EnvID        string            `json:"env_id"`
}

type smpClient struct {
	LoadGenerator     string   `json:"load_generator"`
	Protocol          string   `json:"protocol"`
	Connections       int32    `json:"connections"`
	RPS               int64    `json:"rps"`
	EndpointURLs      []string `json:"endpoint_urls"`
	AdditionalOptions string   `json:"additional_options,omitempty"`
}

type smpTestConfig struct {
	SMPVersion string            `json:"smp_version"`
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels,omitempty"`
	Clients    []smpClient       `json:"clients"`
	Duration   string            `json:"duration"`
}

// smpUsage is SMP's count / cpu_mcores / mem_mb triple (IngressGateway,
// Sidecar).
type smpUsage struct {
	Count     int32 `json:"count"`
	CPUMcores int32 `json:"cpu_mcores"`
	MemMB     int32 `json:"mem_mb,omitempty"`
}

type smpMeshType struct {
	Type        string            `json:"type"`
	Version     string            `json:"version,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type smpMeshConfig struct {
	SMPVersion     string            `json:"smp_version"`
	ID             string            `json:"id"`
	Labels         map[string]string `json:"labels,omitempty"`
	IngressGateway *smpUsage         `json:"ingress_gateway,omitempty"`
	Sidecar        *smpUsage         `json:"sidecar,omitempty"`
	MTLSEnabled    bool              `json:"mtls_enabled"`
	MeshBuild      string            `json:"mesh_build,omitempty"`
	ProxyBuild     string            `json:"proxy_build,omitempty"`
	MeshType       *smpMeshType      `json:"mesh_type,omitempty"`
}

type smpNode struct {
	Type  string `json:"type"`
	Cores int32  `json:"cores"`
	MemMB int64  `json:"mem_mb"`
}

type smpWorkload struct {
	Name      string `json:"name"`
	Count     int32  `json:"count"`
	CPUMcores int32  `json:"cpu_mcores"`
	MemMB     int32  `json:"mem_mb,omitempty"`
}

type smpEnvConfig struct {
	SMPVersion          string            `json:"smp_version"`
	ID                  string            `json:"id"`
	Labels              map[string]string `json:"labels,omitempty"`
	Nodes               []smpNode         `json:"nodes"`
	IndividualWorkloads []smpWorkload     `json:"individual_workloads,omitempty"`
}

// smpTime is a protobuf Timestamp's JSON form: RFC 3339 in UTC ("" when
// unknown, which omits the field).
func smpTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func latencies(c *analysis.Cell) *smpLatency {
	f := c.Figures
	max, ok := f[analysis.LatencyMax]
	if !ok || len(c.Spectrum) == 0 {
		return nil // no answered request: no latency
	}
	// SMP has no "unknown": a percentile the cell's samples do not
	// resolve is its maximum (analysis.PercentileFigures).
	pct := func(fig string) float64 {
		if v, ok := f[fig]; ok {
			return v
		}
		return max
	}
	return &smpLatency{Min: c.Spectrum[0], Average: f[analysis.LatencyMean], P50: pct(analysis.LatencyP50),
		P90: pct(analysis.LatencyP90), P99: pct(analysis.LatencyP99), Max: max}
}

func resultLabels(c *analysis.Cell, l *results.LoadResult) map[string]string {
	lb := map[string]string{
		"meshbench.valid":              strconv.FormatBool(c.Valid),
		"meshbench.latency_from":       "intended send time",
		"meshbench.requests.scheduled": strconv.FormatInt(l.Scheduled, 10),
		"meshbench.requests.sent":      strconv.FormatInt(l.Sent, 10),
		"meshbench.requests.completed": strconv.FormatInt(l.Completed, 10),
		"meshbench.requests.success":   strconv.FormatInt(l.Success, 10),
		"meshbench.requests.dropped":   strconv.FormatInt(l.Dropped, 10),
		"meshbench.requests.canceled":  strconv.FormatInt(l.Canceled, 10),
	}
	if len(c.Invalid) > 0 {
		lb["meshbench.invalid"] = strings.Join(c.Invalid, "; ")
	}
	for code, n := range l.StatusCodes {
		lb["meshbench.status."+code] = strconv.FormatInt(n, 10)
	}
	for _, e := range c.Errors {
		lb["meshbench.error."+e.Kind] = fmt.Sprintf("%d: %s", e.Count, e.Message)
	}
	for i, p := range analysis.SpectrumPercentiles {
		if i < len(c.Spectrum) {
			lb["meshbench.latency_ms.p"+strconv.FormatFloat(p, 'g', -1, 64)] = strconv.FormatFloat(c.Spectrum[i], 'g', -1, 64)
		}
	}
	return lb
}

func testConfig(c *analysis.Cell, run *results.RunManifest, l *results.LoadResult) smpTestConfig {
	cfg := c.Config
	proto := "PROTOCOL_HTTP"
	switch l.Protocol {
	case "grpc":
		proto = "PROTOCOL_GRPC"
	case "tcp":
		proto = "PROTOCOL_TCP"
	}
	// The connections have a field of their own below: not in the name.
	sc := cfg.Scenario()
	sc.Connections = 0
	labels := map[string]string{
		"meshbench.app":      cfg.App,
		"meshbench.rate":     cfg.Rate,
		"meshbench.replicas": strconv.Itoa(cfg.Replicas),
		"meshbench.policies": strconv.Itoa(cfg.Policies),
		"meshbench.protocol": l.Protocol,
		"meshbench.gateway":  strconv.FormatBool(cfg.Gateway),
		"meshbench.mtls":     strconv.FormatBool(cfg.MTLS),
		"meshbench.cell":     c.ID,
		"meshbench.platform": run.Platform,
	}
	// The later axes as the cell recorded them, each where set.
	if st, err := run.Settings(); err == nil {
		for k, v := range map[string]int{"payload": st.Payload, "proxy_threads": st.ProxyThreads, "requests_per_connection": st.RequestsPerConnection} {
			if v > 0 {
				labels["meshbench."+k] = strconv.Itoa(v)
			}
		}
		for k, v := range map[string]string{"placement": st.Placement, "arrivals": st.Arrivals} {
			if v != "" {
				labels["meshbench."+k] = v
			}
		}
		if st.Bulk {
			labels["meshbench.rate"] = "bulk"
		}
	}
	return smpTestConfig{
		SMPVersion: SMPVersion,
		ID:         c.ID + "/test",
		Name:       cfg.Mesh + ", " + sc.String(),
		Labels:     labels,
		Clients: []smpClient{{
			LoadGenerator: "meshbench " + l.MeshbenchVersion,
			Protocol:      proto,
			Connections:   int32(l.Connections),
			RPS:           int64(math.Round(l.TargetRatePerSec)),
			EndpointURLs:  l.Targets,
			AdditionalOptions: fmt.Sprintf("model=%s warmup=%s timeout=%s max_queue=%d", l.Model,
				time.Duration(l.WarmupNs), time.Duration(l.TimeoutNs), l.MaxQueue) + sendTickOption(l.SendTickNs),
		}},
		Duration: time.Duration(l.DurationNs).String(),
	}
}

// sendTickOption is the engine's send tick in the client's options, ""
// without one.
func sendTickOption(ns int64) string {
	if ns <= 0 {
		return ""
	}
	return " send_tick=" + time.Duration(ns).String()
}

func meshConfig(c *analysis.Cell, run *results.RunManifest) smpMeshConfig {
	mode := analysis.MeshMode(c.Config.Mesh)
	m := smpMeshConfig{SMPVersion: SMPVersion, ID: c.ID + "/mesh", Labels: map[string]string{"meshbench.mode": mode},
		MeshBuild: "meshbench " + run.MeshbenchVersion}
	d, known := mesh.Get(mode)
	if known && d.Kind == mesh.KindNone {
		m.Labels["meshbench.mesh"] = "no mesh"
		return m
	}
	m.MTLSEnabled = c.Config.MTLS
	if run.EnvoyVersion != "" {
		m.ProxyBuild = "envoy " + run.EnvoyVersion
	}
	if known && d.SMPType != "" {
		m.MeshType = &smpMeshType{Type: d.SMPType, Labels: maps.Clone(d.SMPLabels)}
		// Only the local lab emulates a mesh, and only with its own
		// configs: on a cluster, and on the lab with istiod, the mesh is
		// the real one.
		cp := analysis.ControlPlaneOf(c.Config.Mesh)
		if d.Emulates != "" && run.Local() && cp != analysis.ControlPlaneIstiod {
			note := "meshbench's local Envoy emulation of the " + d.Emulates + " data plane, not " + d.Product + " itself"
			if sub, _ := run.Options["substrate"].(string); sub == "netns" && d.Kind != mesh.KindSidecar {
				// The netns substrate runs Istio's own ztunnel: only its
				// configuration is meshbench's.
				note = "Istio's own ztunnel configured from meshbench's local config file, not by istiod (a waypoint: Envoy with meshbench's config): " +
					"meshbench's emulation of the " + d.Emulates + " control plane, not " + d.Product + " itself"
			}
			m.MeshType.Annotations = map[string]string{"meshbench.io/emulation": note}
		}
	}
	// Who configured the proxies, as the cell's manifest recorded it.
	if cp := analysis.ControlPlaneOf(c.Config.Mesh); cp != "" {
		m.Labels["meshbench.control_plane"] = cp
	}
	count := map[string]int32{}
	for _, p := range run.Processes {
		count[p.Category]++
	}
	usage := func(category string) *smpUsage {
		cpu, ok := c.Figures[analysis.CPUPrefix+category]
		if !ok || count[category] == 0 {
			return nil
		}
		u := &smpUsage{Count: count[category], CPUMcores: int32(math.Round(cpu))}
		if mib, ok := c.Figures[analysis.MemPrefix+category]; ok {
			u.MemMB = mibToMB(mib)
		}
		return u
	}
	if known && d.Kind == mesh.KindSidecar {
		m.Sidecar = usage(sample.CategoryDataPlane)
	}
	if c.Config.Gateway {
		m.IngressGateway = usage(sample.CategoryGateway)
	}
	return m
}

func mibToMB(mib float64) int32 { return int32(math.Round(mib * (1 << 20) / 1e6)) }

func envConfig(c *analysis.Cell, run *results.RunManifest) smpEnvConfig {
	h := run.Host
	e := smpEnvConfig{SMPVersion: SMPVersion, ID: c.ID + "/env",
		Labels: map[string]string{"meshbench.platform": run.Platform, "meshbench.hostname": h.Hostname,
			"meshbench.kernel": h.Kernel, "meshbench.os": h.OS, "meshbench.arch": h.Arch},
		Nodes: []smpNode{{Type: h.CPUModel, Cores: int32(h.CPUs), MemMB: int64(math.Round(float64(h.MemoryBytes) / 1e6))}},
	}
	count := map[string]int32{}
	for _, p := range run.Processes {
		count[p.Component]++
	}
	prefix := analysis.CPUPrefix + analysis.ComponentInfix
	var names []string
	for k := range c.Figures {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w := smpWorkload{Name: n, Count: max(count[n], 1), CPUMcores: int32(math.Round(c.Figures[prefix+n]))}
		if mib, ok := c.Figures[analysis.MemPrefix+analysis.ComponentInfix+n]; ok {
			w.MemMB = mibToMB(mib)
		}
		e.IndividualWorkloads = append(e.IndividualWorkloads, w)
	}
	return e
}
