package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
)

// TestLaterAxes: connections, payload, proxy_threads,
// requests_per_connection and arrivals cross like the other axes, name
// their values in cell IDs, reach each cell's settings and round-trip
// through the canonical YAML; a plan without them keeps its IDs.
func TestLaterAxes(t *testing.T) {
	p := mustParse(t, "p.yaml", `repetitions: 1
axes:
  mesh: [none, sidecar]
  rate: [1000]
  connections: [2, 64]
  payload: [1024]
  proxy_threads: [1, 2]
  requests_per_connection: [0, 1]
  arrivals: [constant, poisson]
compare: [mesh, connections, proxy_threads]
`)
	// none: proxy threads fold into the first value (no proxy); sidecar
	// has both. Each topology runs 2 connections × 2 per-connection ×
	// 2 arrivals.
	cells := p.Cells()
	if want := (1 + 2) * 2 * 2 * 2; len(cells) != want {
		t.Fatalf("%d cells, want %d", len(cells), want)
	}
	ids := map[string]Cell{}
	for _, c := range cells {
		ids[c.ID] = c
	}
	c, ok := ids["sidecar-static-r1000-x1-p0-http-pod-mtls-b1024-t2-c64-k1-poisson-rep1"]
	if !ok {
		t.Fatalf("no cell sidecar…-b1024-t2-c64-k1-poisson-rep1 among %v", slices.Collect(func(yield func(string) bool) {
			for id := range ids {
				if !yield(id) {
					return
				}
			}
		}))
	}
	if c.Mesh.ProxyThreads != 2 || c.TopologyKey != "sidecar-static-x1-p0-http-pod-mtls-n1-b1024-t2" {
		t.Errorf("cell %s: proxy threads %d, topology %s", c.ID, c.Mesh.ProxyThreads, c.TopologyKey)
	}
	s := p.Settings(c)
	if s.Connections != 64 || s.RequestsPerConnection != 1 || s.Arrivals != loadgen.ArrivalsPoisson || s.ArrivalsSeed != 1 || s.BodySize != 1024 {
		t.Errorf("settings %+v: want 64 connections, 1 per connection, poisson seed 1, 1024 bytes", s)
	}
	rec := s.Record(c.Mesh)
	if rec.ProxyThreads != 2 || rec.Payload != 1024 || rec.RequestsPerConnection != 1 || rec.Arrivals != "poisson" || rec.Connections != 64 {
		t.Errorf("recorded settings %+v", rec)
	}
	skipped := false
	for _, s := range p.Skipped() {
		if strings.Contains(s.Reason, "mesh none with proxy_threads 2: no proxy") {
			skipped = true
		}
	}
	if !skipped {
		t.Errorf("skipped %+v: want none at 2 proxy threads listed with its reason", p.Skipped())
	}
	if base, ok := p.BaselineOf(c); !ok || base != "none-static-r1000-x1-p0-http-pod-mtls-b1024-t1-c64-k1-poisson" {
		t.Errorf("baseline of %s: %q, %v", c.ID, base, ok)
	}
	back := mustParse(t, "back.yaml", string(p.YAML()))
	if !slices.Equal(back.Axes.Connections, p.Axes.Connections) || !slices.Equal(back.Axes.ProxyThreads, p.Axes.ProxyThreads) ||
		!slices.Equal(back.Axes.Arrivals, p.Axes.Arrivals) || !slices.Equal(back.Axes.RequestsPerConnection, p.Axes.RequestsPerConnection) ||
		!slices.Equal(back.Axes.Payload, p.Axes.Payload) || len(back.Cells()) != len(cells) {
		t.Errorf("round trip:\n%s", p.YAML())
	}

	// Flags: --connections with a comma is the axis.
	f, err := FromFlags(Flags{Mesh: "sidecar", Connections: "2,4", ProxyThreads: "1,2", Compare: "mesh,proxy_threads"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Axes.Connections, []int{2, 4}) || !slices.Equal(f.Axes.ProxyThreads, []int{1, 2}) || len(f.Cells()) != 2*2*3 {
		t.Errorf("from flags: connections %v, threads %v, %d cells", f.Axes.Connections, f.Axes.ProxyThreads, len(f.Cells()))
	}
}

// TestBulkAndLoadSkips: load_model bulk is its own rate value ("rbulk")
// and the loads it cannot run are listed as skipped with why.
func TestBulkAndLoadSkips(t *testing.T) {
	p := mustParse(t, "b.yaml", `repetitions: 1
axes:
  mesh: [none, sidecar]
  rate: [100]
  load_model: [open, closed, bulk]
  requests_per_connection: [0, 1]
`)
	var bulk []string
	for _, c := range p.Cells() {
		if c.Rate.Bulk() {
			bulk = append(bulk, c.ID)
		}
	}
	if !slices.Equal(bulk, []string{"none-static-rbulk-x1-p0-http-pod-mtls-k0-rep1", "sidecar-static-rbulk-x1-p0-http-pod-mtls-k0-rep1"}) {
		t.Errorf("bulk cells %v", bulk)
	}
	var reasons []string
	for _, s := range p.Skipped() {
		reasons = append(reasons, s.Config+": "+s.Reason)
	}
	if !slices.Contains(reasons, "sidecar-static-rbulk-x1-p0-http-pod-mtls-k1: load_model bulk with requests_per_connection 1: a bulk connection carries one endless answer") {
		t.Errorf("skipped:\n%s", strings.Join(reasons, "\n"))
	}
	if !slices.Equal(p.Axes.LoadModels(), []string{LoadOpen, LoadClosed, LoadBulk}) {
		t.Errorf("load models %v", p.Axes.LoadModels())
	}
}

// TestLaterAxesProblems: bad values are named with what is allowed.
func TestLaterAxesProblems(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"connections 0", "axes:\n  connections: [0]\n", `axes.connections "0": allowed: a whole number, 1 or more`},
		{"both connections", "connections: 4\naxes:\n  connections: [2, 8]\n", `connections "4": given with axes.connections`},
		{"threads", "axes:\n  proxy_threads: [0]\n", `axes.proxy_threads "0": allowed: 1 to 256 worker threads per proxy`},
		{"arrivals", "axes:\n  arrivals: [bursty]\n", `axes.arrivals "bursty": allowed: constant`},
		{"same node gateway", "axes:\n  mesh: [sidecar]\n  gateway: [true]\n  placement: [same-node]\n", `axes.placement same-node: the load enters through the gateway's own node`},
		{"poisson only closed", "axes:\n  load_model: [closed]\n  arrivals: [poisson]\n", `axes.arrivals "poisson": no cell has it: arrivals poisson with load_model max`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to say %q", err, tc.want)
			}
		})
	}
}

// TestLaterAxesOnKube: a cluster plan takes payload,
// requests_per_connection, arrivals, placement and proxy_threads (the app
// Deployment's --body-size, the load workers' arguments and affinity,
// the per-pod proxies' own setting) into every cell's settings;
// proxy_threads with ambient and waypoint too (ztunnel's DaemonSet and
// the waypoint Gateway set them on the cluster).
func TestLaterAxesOnKube(t *testing.T) {
	p := mustParse(t, "p.yaml", `platform: kube
repetitions: 2
axes:
  mesh: [none, sidecar]
  rate: [200]
  payload: [64, 4096]
  requests_per_connection: [0, 1]
  arrivals: [constant, poisson]
  placement: [cross-node, same-node]
  proxy_threads: [1, 2]
`)
	// none runs one thread count (no proxy); sidecar both.
	if want := (1 + 2) * 2 * 2 * 2 * 2 * 2; len(p.Cells()) != want {
		t.Fatalf("%d cells, want %d", len(p.Cells()), want)
	}
	var found bool
	for _, c := range p.Cells() {
		if c.ID != "sidecar-static-r200-x1-p0-http-pod-mtls-b4096-t2-same-node-k1-poisson-rep2" {
			continue
		}
		found = true
		s := p.Settings(c)
		if s.BodySize != 4096 || s.RequestsPerConnection != 1 || s.Arrivals != loadgen.ArrivalsPoisson || s.ArrivalsSeed != 2 || s.Mesh.Placement != "same-node" || s.Mesh.ProxyThreads != 2 {
			t.Errorf("settings %+v: want 4096 bytes, 1 request per connection, poisson seed 2, same-node, 2 threads", s)
		}
	}
	if !found {
		t.Errorf("no cell sidecar…-b4096-t2-same-node-k1-poisson-rep2")
	}
	if _, err := Parse("p.yaml", []byte("platform: kube\nbody_size: 2048\n")); err != nil {
		t.Errorf("body_size on kube: %v", err)
	}
	w := mustParse(t, "p.yaml", "platform: kube\nrepetitions: 1\naxes:\n  mesh: [ambient, waypoint]\n  proxy_threads: [1, 2]\n")
	var threads []int
	for _, c := range w.Cells() {
		threads = append(threads, w.Settings(c).Mesh.ProxyThreads)
	}
	if !slices.Equal(threads, []int{1, 2, 1, 2}) {
		t.Errorf("ambient and waypoint on kube: threads %v, want 1, 2 each", threads)
	}
	// Bulk through the load Job's workers, and the connection rate (the
	// closed loop, a connection per request).
	b := mustParse(t, "p.yaml", "platform: kube\nrepetitions: 1\naxes:\n  mesh: [none, sidecar]\n  load_model: [bulk, closed]\n  requests_per_connection: [0, 1]\n")
	var ids []string
	for _, c := range b.Cells() {
		ids = append(ids, c.ID)
	}
	if want := 2 * 3; len(ids) != want || !slices.Contains(ids, "sidecar-static-rbulk-x1-p0-http-pod-mtls-k0-rep1") || !slices.Contains(ids, "sidecar-static-rmax-x1-p0-http-pod-mtls-k1-rep1") {
		t.Errorf("cells %v: want bulk on kept connections and the closed loop on both, per mesh", ids)
	}
}

// TestSendTick: send_tick reaches the settings of the cells it applies
// to (open loop, meshbench's engine) and no others, is recorded only
// there, and the plan reads back the same; a plan it cannot apply to is
// refused, as is a tick out of range.
func TestSendTick(t *testing.T) {
	p := mustParse(t, "p.yaml", `repetitions: 1
send_tick: 1ms
axes:
  mesh: [none]
  rate: [1000, max]
  generator: [meshbench, oha]
`)
	ticked := map[string]string{}
	for _, c := range p.Cells() {
		s := p.Settings(c)
		ticked[c.ID] = s.SendTick.String()
		if got, want := s.Record(s.Mesh).SendTick, map[bool]string{true: "1ms", false: ""}[s.SendTick > 0]; got != want {
			t.Errorf("%s: recorded send_tick %q, want %q", c.ID, got, want)
		}
	}
	want := map[string]string{
		"none-static-r1000-x1-p0-http-pod-mtls-rep1": "1ms", "none-static-r1000-x1-p0-http-pod-mtls-goha-rep1": "0s",
		"none-static-rmax-x1-p0-http-pod-mtls-rep1": "0s", "none-static-rmax-x1-p0-http-pod-mtls-goha-rep1": "0s",
	}
	if !maps.Equal(ticked, want) {
		t.Errorf("send ticks by cell %v\nwant %v", ticked, want)
	}
	back := mustParse(t, "back.yaml", string(p.YAML()))
	if back.SendTick != time.Millisecond {
		t.Errorf("written back: send_tick %v\n%s", back.SendTick, p.YAML())
	}
	if zero := mustParse(t, "p.yaml", "send_tick: 0\naxes:\n  rate: [max]\n"); zero.SendTick != 0 {
		t.Errorf("send_tick 0: %v", zero.SendTick)
	}
	if none := mustParse(t, "p.yaml", "axes:\n  mesh: [none]\n"); strings.Contains(string(none.YAML()), "send_tick") {
		t.Errorf("a plan without send_tick writes it:\n%s", none.YAML())
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"too long", "send_tick: 20ms\n", `send_tick "20ms": allowed: 0 (each request at its own time) or a duration from 100µs to 10ms`},
		{"too short", "send_tick: 50us\n", `send_tick "50us": allowed`},
		{"not a duration", "send_tick: often\n", `send_tick "often": allowed`},
		{"closed only", "send_tick: 1ms\naxes:\n  rate: [max]\n", `send_tick "1ms": applies to an open loop's schedule`},
		{"external only", "send_tick: 1ms\naxes:\n  generator: [oha]\n", `send_tick "1ms": applies to meshbench's own engine`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to say %q", err, tc.want)
			}
		})
	}
}
