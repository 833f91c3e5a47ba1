package istiolog

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"

	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}) }

// TestProvider: the MeshConfig fragment reads back as Istio's own
// MeshConfig type (unknown fields refused) with every key of hop
// timing's format.
func TestProvider(t *testing.T) {
	b, err := MeshConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	var mc meshv1alpha1.MeshConfig
	if err := (protojson.UnmarshalOptions{}).Unmarshal(b, &mc); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	p := mc.GetExtensionProviders()
	if len(p) != 1 || p[0].GetName() != ProviderName || p[0].GetEnvoyFileAccessLog().GetPath() != "/dev/stdout" {
		t.Fatalf("providers %v", p)
	}
	labels := p[0].GetEnvoyFileAccessLog().GetLogFormat().GetLabels().AsMap()
	for _, k := range []string{hops.KeyRequestID, hops.KeyProxy, hops.KeyHop, hops.KeyDownstreamUs, hops.KeyUpstreamUs, hops.KeyCluster} {
		if _, ok := labels[k]; !ok {
			t.Errorf("labels lack %s: %v", k, labels)
		}
	}
	if labels[hops.KeyDownstreamUs] != "%COMMON_DURATION(DS_RX_BEG:DS_TX_END:us)%" {
		t.Errorf("downstream_us %v", labels[hops.KeyDownstreamUs])
	}
}

// istioCRD returns the Telemetry CRD from Istio's own API module (its
// generated customresourcedefinitions.gen.yaml), as the module cache
// holds it.
func istioCRD(t *testing.T) []byte {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "istio.io/api").Output()
	if err != nil {
		t.Fatalf("finding istio.io/api: %v", err)
	}
	all, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "kubernetes", "customresourcedefinitions.gen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(all, []byte("\n---\n")) {
		if bytes.Contains(doc, []byte("\n  name: telemetries.telemetry.istio.io\n")) {
			return doc
		}
	}
	t.Fatal("no Telemetry CRD in istio.io/api's customresourcedefinitions.gen.yaml")
	return nil
}

// TestTelemetryOnAPIServer: with Istio's Telemetry CRD installed on a
// real API server, the object is accepted as written and reads back
// with its provider; a misspelt field is refused by the CRD's schema,
// which is what makes the acceptance mean something.
func TestTelemetryOnAPIServer(t *testing.T) {
	c := kubetest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := c.KubectlStdin(ctx, istioCRD(t), "apply", "-f", "-"); err != nil {
		t.Fatalf("applying the CRD: %v: %s", err, out)
	}
	if out, err := c.Kubectl(ctx, "wait", "--for", "condition=established", "--timeout", "60s", "crd/telemetries.telemetry.istio.io"); err != nil {
		t.Fatalf("CRD not established: %v: %s", err, out)
	}
	ns := "hops-telemetry"
	if out, err := c.Kubectl(ctx, "create", "namespace", ns); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() {
		_, _ = c.Kubectl(context.Background(), "delete", "namespace", ns, "--wait=false")
		_, _ = c.Kubectl(context.Background(), "delete", "crd", "telemetries.telemetry.istio.io", "--wait=false")
	})
	obj, err := Telemetry("meshbench-hops", ns)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.KubectlStdin(ctx, obj, "apply", "-f", "-"); err != nil {
		t.Fatalf("applying %s: %v: %s", obj, err, out)
	}
	got, err := c.Kubectl(ctx, "get", "-n", ns, "telemetry.telemetry.istio.io", "meshbench-hops", "-o", "json")
	if err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	var back struct {
		Spec struct {
			AccessLogging []struct {
				Providers []struct{ Name string } `json:"providers"`
			} `json:"accessLogging"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if a := back.Spec.AccessLogging; len(a) != 1 || len(a[0].Providers) != 1 || a[0].Providers[0].Name != ProviderName {
		t.Errorf("read back %s", got)
	}
	bad := bytes.Replace(obj, []byte(`"accessLogging"`), []byte(`"accessLoging"`), 1)
	bad = bytes.Replace(bad, []byte(`"meshbench-hops","namespace"`), []byte(`"misspelt","namespace"`), 1)
	if out, err := c.KubectlStdin(ctx, bad, "apply", "--validate=strict", "-f", "-"); err == nil || !strings.Contains(string(out)+err.Error(), "accessLoging") {
		t.Errorf("a misspelt field: %v: %s", err, out)
	}
}
