package policy

import (
	"testing"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// TestEveryProductRenders: every mesh project a descriptor names has a
// renderer with policies, so a new mesh cannot silently run without its
// ALLOW rules; a mode without a product (none) renders nothing.
func TestEveryProductRenders(t *testing.T) {
	for _, m := range mesh.All() {
		c := Cell{Mesh: m, Options: topology.Options{Mode: topology.Mode(m.Name), MTLS: true, App: topology.AppStatic, Policies: 3},
			AppNamespace: "app", LoadNamespace: "load", AppPort: 8080, LoadServiceAccount: "client",
			Labels: map[string]string{"run": "x"}, AppPods: map[string]string{"role": "app"}}
		objs, err := PolicyObjects(c)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if m.Product == "" {
			if len(objs) != 0 || len(MeshObjects(c)) != 0 {
				t.Errorf("%s (no product): %d policy objects, %d mesh objects", m.Name, len(objs), len(MeshObjects(c)))
			}
			continue
		}
		if renderers[m.Product].policies == nil {
			t.Errorf("%s: product %q has no policy renderer", m.Name, m.Product)
		}
		if len(objs) < 3 {
			t.Errorf("%s: 3 rules rendered as %d objects", m.Name, len(objs))
		}
		for _, o := range objs {
			if u, ok := o.(interface{ GetLabels() map[string]string }); !ok || u.GetLabels()["run"] != "x" {
				t.Errorf("%s: object without the run's labels: %v", m.Name, o)
			}
		}
	}
}
