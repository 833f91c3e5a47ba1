package install

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestIstioBuilt: the install of Istio built here runs the build's
// istioctl with the overlay's arguments, names the measured proxy, applies
// the Gateway API CRDs before the overlay's EnvoyFilter, and gives a
// waypoint its own EnvoyFilter.
func TestIstioBuilt(t *testing.T) {
	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	mi, err := IstioBuilt(b, "", "", "BUILD")
	if err != nil || mi.CLI != b.Path("istioctl") || mi.For != "istioctl" || !strings.Contains(mi.Proxy, "upstream Envoy BUILD") || !slices.Contains(mi.Args, "tag="+istio.Version) {
		t.Fatalf("IstioBuilt: %v %+v", err, mi)
	}
	if wf := mi.WaypointObjects("demo", "waypoint"); len(wf) != 1 || wf[0].(*unstructured.Unstructured).GetNamespace() != "demo" {
		t.Errorf("WaypointObjects: %v", wf)
	}
	var names []string
	for _, o := range mi.Objects {
		u := o.(*unstructured.Unstructured)
		names = append(names, u.GetKind()+"/"+u.GetName())
	}
	if len(names) < 2 || !strings.HasPrefix(names[len(names)-1], "EnvoyFilter/") || !slices.Contains(names, "CustomResourceDefinition/gateways.gateway.networking.k8s.io") {
		t.Errorf("objects %v; want the Gateway API CRDs, then the EnvoyFilter", names)
	}
}
