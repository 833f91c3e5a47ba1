package results

import (
	"encoding/json"
	"fmt"
)

// CellSettingsSchema names the JSON Schema of CellSettings
// (schema/cell-settings.v1.schema.json in the repository).
const CellSettingsSchema = "meshbench.cell-settings/v1"

// CellSettingsVersion is the newest version of CellSettings this
// meshbench reads. It writes version 1 when a cell uses none of version
// 2's settings (bulk, payload, proxy_threads, placement,
// requests_per_connection, arrivals), so earlier readers still read it,
// and version 2 otherwise, which they refuse instead of misreading (a
// bulk cell taken for an open loop, say). send_tick, added later, is a
// version 2 setting too.
const CellSettingsVersion = 2

// CellSettings are the settings of one cell that every platform records in
// RunManifest.Options, under these keys, and analysis reads back: the
// topology (mesh options) and the load. A platform adds keys of its own
// beside them (kube: workers, cluster, image, …; local: pss_every_rounds,
// validated_configs), which CellSettings ignores. Every manifest meshbench
// has written carries these keys in this form (version 1), so old results
// read back as new ones do; those written before the version key existed
// read as version 1.
type CellSettings struct {
	// Version is the record's version: CellSettingsVersion when written
	// (Options sets it), 1 for a manifest without the key.
	Version  int    `json:"settings_version"`
	Mesh     string `json:"mesh"`     // mesh mode (internal/mesh)
	App      string `json:"app"`      // static or faces
	Replicas int    `json:"replicas"` // pods per service of the app
	Nodes    int    `json:"nodes"`    // app nodes
	Policies int    `json:"policies"` // L4 ALLOW rules
	Gateway  bool   `json:"gateway"`  // load through an ingress gateway
	Protocol string `json:"protocol"` // http or tcp
	MTLS     bool   `json:"mtls"`
	// Rate is the open-loop rate as `meshbench load --rate` reads it, ""
	// for the closed loop; ClosedLoop is true for the closed loop (`load
	// --max`).
	Rate       string `json:"rate"`
	ClosedLoop bool   `json:"closed_loop"`
	// Duration, Warmup, SampleInterval and Drain are Go durations ("10s").
	Duration       string `json:"duration"`
	Warmup         string `json:"warmup"`
	Connections    int    `json:"connections"`
	SampleInterval string `json:"sample_interval"`
	Drain          string `json:"drain"`
	// Substrate is the local lab's network ("netns", "loopback"); empty
	// on a cluster and in manifests written before substrates existed.
	Substrate string `json:"substrate,omitempty"`
	// Generator is the load generator that measured the cell (`--generator`:
	// oha, wrk2, vegeta, fortio); empty for meshbench's own engine and in
	// manifests written before the choice was recorded.
	Generator string `json:"generator,omitempty"`
	// Fault is the fault the cell ran with, as a plan writes it
	// ("kill:node-proxy@3s"); empty for none. What it did is recorded
	// beside it (the platform's fault_record).
	Fault string `json:"fault,omitempty"`
	// ControlPlane is who configured the lab's sidecars, as the netns
	// substrate records it (its control_plane entry, written through the
	// platform's own keys); nil on loopback, on a cluster and before it
	// was recorded.
	ControlPlane *ControlPlane `json:"control_plane,omitempty"`
	// The settings below are version 2's: each omitted at its zero value,
	// which a version-1 manifest reads as.
	//
	// Bulk: the load was bulk throughput (loadgen.Bulk; Rate "", not the
	// closed loop). Payload is the static app's answer in bytes (0: the
	// app's default, 615). ProxyThreads is every proxy's worker threads (0:
	// the platform's defaults). Placement is the client's placement
	// ("cross-node", "same-node"; "": the platform's default, cross-node).
	// RequestsPerConnection: 0 kept every connection, N opened a new one
	// every N requests. Arrivals: "" or "constant", "poisson". SendTick is
	// the open loop's send tick as a Go duration ("1ms", `meshbench load
	// --send-tick`); "": each request sent at its own time.
	Bulk                  bool   `json:"bulk,omitempty"`
	Payload               int    `json:"payload,omitempty"`
	ProxyThreads          int    `json:"proxy_threads,omitempty"`
	Placement             string `json:"placement,omitempty"`
	RequestsPerConnection int    `json:"requests_per_connection,omitempty"`
	Arrivals              string `json:"arrivals,omitempty"`
	SendTick              string `json:"send_tick,omitempty"`
}

// ControlPlane is the netns substrate's record of who configured a
// cell's proxies: Name "lab" (the fast path: meshbench's own Envoy
// configs, ztunnel's local config file, the lab's stand-in for Linkerd's
// control plane), "istiod" or "linkerd" (the real control plane on the
// lab's API server). Every output's label is made from it
// (analysis.ControlPlaneOf).
type ControlPlane struct {
	Name string `json:"name"`
}

// Options returns s as the manifest's options map, with extra (a
// platform's own keys) added; extra may not redefine a key of s.
func (s CellSettings) Options(extra map[string]any) map[string]any {
	m := map[string]any{
		"settings_version": 1, "mesh": s.Mesh, "app": s.App, "replicas": s.Replicas, "nodes": s.Nodes,
		"policies": s.Policies, "gateway": s.Gateway, "protocol": s.Protocol, "mtls": s.MTLS,
		"rate": s.Rate, "closed_loop": s.ClosedLoop, "duration": s.Duration, "warmup": s.Warmup,
		"connections": s.Connections, "sample_interval": s.SampleInterval, "drain": s.Drain,
	}
	if s.Substrate != "" {
		m["substrate"] = s.Substrate
	}
	if s.Generator != "" {
		m["generator"] = s.Generator
	}
	if s.Fault != "" {
		m["fault"] = s.Fault
	}
	for k, v := range map[string]any{"bulk": s.Bulk, "payload": s.Payload, "proxy_threads": s.ProxyThreads, "placement": s.Placement,
		"requests_per_connection": s.RequestsPerConnection, "arrivals": s.Arrivals, "send_tick": s.SendTick} {
		if v != false && v != 0 && v != "" {
			m[k] = v
			m["settings_version"] = CellSettingsVersion
		}
	}
	for k, v := range extra {
		if _, ok := m[k]; ok {
			panic("results: CellSettings.Options: extra key " + k + " is a setting")
		}
		m[k] = v
	}
	return m
}

// Settings reads the cell settings back from m.Options (keys missing in a
// manifest read as zero values; a missing version as 1). It fails when a
// key holds a value of the wrong type or the record is newer than
// CellSettingsVersion.
func (m *RunManifest) Settings() (CellSettings, error) {
	var s CellSettings
	b, err := json.Marshal(m.Options)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("manifest options: %w", err)
	}
	if s.Version == 0 {
		s.Version = 1 // written before the key existed
	}
	if s.Version > CellSettingsVersion {
		return s, fmt.Errorf("manifest options: settings_version %d: this meshbench reads up to %d; use a newer meshbench", s.Version, CellSettingsVersion)
	}
	return s, nil
}
