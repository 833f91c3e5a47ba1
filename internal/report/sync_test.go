package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestSyncTable: istiod's syncz for the ingress gateway on upstream Envoy
// (mesh/istio's testdata: a real answer) and a proxy with a NACKed and a
// pending type print as istiod's ACK table, one row per proxy, "-" where a
// type was not sent to that proxy or the proxy reported no version (a
// ztunnel built here).
func TestSyncTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "mesh", "istio", "testdata", "syncz-gateway.json"))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := istio.ParseSyncz(data)
	if err != nil {
		t.Fatal(err)
	}
	nack, err := istio.ParseSyncz([]byte(`[{"cluster_id":"Kubernetes","proxy":"ztunnel-node1.istio-system","proxy_type":"ztunnel",
	  "resources":{"type.googleapis.com/istio.workload.Address":{"sent":"v1","acked":"v1"}}},
	 {"cluster_id":"Kubernetes","proxy":"a.demo","proxy_type":"sidecar","istio_version":"1.31",
	  "resources":{"type.googleapis.com/envoy.config.listener.v3.Listener":{"sent":"v2","acked":"v1","lastError":"Didn't find a registered implementation for 'istio.alpn'"},
	               "type.googleapis.com/envoy.config.cluster.v3.Cluster":{"sent":"v2","acked":"v2"},
	               "type.googleapis.com/envoy.config.route.v3.RouteConfiguration":{"sent":"v3","acked":"v2"}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := SyncTable(&b, istio.SyncRows(append(ps, nack...))); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "sync-table.golden", b.Bytes())
}
