package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// rawStats reads the counters and gauges of a proxy's kept /stats JSON.
func rawStats(t *testing.T, dir, proxy string) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.EnvoyDir, proxy+".stats.json"))
	if err != nil {
		t.Fatalf("stats of %s: %v", proxy, err)
	}
	var doc struct {
		Stats []struct {
			Name  string  `json:"name"`
			Value *uint64 `json:"value"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("stats of %s: %v", proxy, err)
	}
	out := map[string]uint64{}
	for _, s := range doc.Stats {
		if s.Value != nil {
			out[s.Name] = *s.Value
		}
	}
	return out
}

// sumStats adds the values of every stat whose name ends with suffix.
func sumStats(m map[string]uint64, suffix string) uint64 {
	var n uint64
	for k, v := range m {
		if strings.HasSuffix(k, suffix) {
			n += v
		}
	}
	return n
}

// TestRunFaces runs the faces app (face → smiley over HTTP, face → color
// over gRPC, each service its own processes) through real Envoys and
// proves from their stats that every hop took the mesh: mTLS into each
// service's sidecars, HTTP/2 to color, the policies allowing face's calls,
// the waypoint routing each service by its CONNECT authority.
func TestRunFaces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	tests := []struct {
		name   string
		mode   topology.Mode
		mut    func(*topology.Options)
		checks func(t *testing.T, dir string, requests uint64)
	}{
		{"sidecar-policies", topology.ModeSidecar, func(o *topology.Options) { o.Policies = 5 }, func(t *testing.T, dir string, n uint64) {
			var colorH2, colorTLS, allowed, denied uint64
			for _, p := range []string{"color-0-sidecar", "color-1-sidecar"} {
				st := rawStats(t, dir, p)
				colorH2 += st["http.virtualInbound.downstream_cx_http2_total"]
				colorTLS += sumStats(st, "_15006.ssl.handshake")
				allowed += sumStats(st, "rbac.allowed")
				denied += sumStats(st, "rbac.denied")
			}
			if colorH2 == 0 || colorTLS == 0 {
				t.Errorf("color sidecars: %d HTTP/2 connections, %d TLS handshakes; want both > 0", colorH2, colorTLS)
			}
			if allowed == 0 || denied != 0 {
				t.Errorf("color sidecars: rbac allowed %d denied %d, want > 0 and 0", allowed, denied)
			}
			var smiley uint64
			for _, p := range []string{"face-0-sidecar", "face-1-sidecar"} {
				smiley += rawStats(t, dir, p)["http.virtualOutbound_smiley.downstream_rq_2xx"]
			}
			if smiley < n {
				t.Errorf("face sidecars sent %d smiley requests, want ≥ %d", smiley, n)
			}
		}},
		{"ambient", topology.ModeAmbient, nil, func(t *testing.T, dir string, n uint64) {
			st := rawStats(t, dir, "ztunnel-node2")
			if got := st["tcp.outbound_face-0_color.downstream_cx_total"] + st["tcp.outbound_face-1_color.downstream_cx_total"]; got == 0 {
				t.Errorf("node proxy carried %d connections from face to color, want > 0", got)
			}
			if got := st["http.hbone_inbound.downstream_rq_2xx"]; got == 0 {
				t.Errorf("node proxy terminated %d HBONE streams, want > 0", got)
			}
		}},
		{"waypoint", topology.ModeWaypoint, nil, func(t *testing.T, dir string, n uint64) {
			st := rawStats(t, dir, "waypoint")
			for _, prefix := range []string{"http.main_internal.", "http.main_internal_smiley.", "http.main_internal_color."} {
				if got := st[prefix+"downstream_rq_2xx"]; got < n {
					t.Errorf("waypoint %sdownstream_rq_2xx = %d, want ≥ %d", prefix, got, n)
				}
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := labOptions(t, tt.mode, 2, uint8(14+i))
			o.Mesh.App = topology.AppFaces
			if tt.mut != nil {
				tt.mut(&o.Mesh)
			}
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			defer assertNothingLeft(t, res.Manifest)
			if !res.Manifest.Valid || res.Load.Success != res.Load.Sent || res.Load.Sent != 200 {
				t.Fatalf("valid %v %v, sent %d success %d (codes %v errors %v)", res.Manifest.Valid, res.Manifest.Invalid,
					res.Load.Sent, res.Load.Success, res.Load.StatusCodes, res.Load.Errors)
			}
			got := map[string]bool{}
			for _, c := range res.Summary.Components {
				got[c.Name] = true
			}
			for _, c := range []string{"app face", "app smiley", "app color", "load"} {
				if !got[c] {
					t.Errorf("component %q not sampled (have %v)", c, got)
				}
			}
			tt.checks(t, res.Dir, uint64(res.Load.Sent))
		})
	}
}

// TestMain removes the meshbench build the tests make.
func TestMain(m *testing.M) { testutil.Main(m) }
