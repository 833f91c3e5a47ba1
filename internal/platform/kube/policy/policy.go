// Package policy renders a cell's mesh objects on a cluster: the
// mesh's own objects (Istio's PeerAuthentications, the waypoint Gateway)
// and the local lab's L4 ALLOW rules (topology.RulesFor) in each mesh's
// policy kinds. Each mesh project renders in its own file (istio.go,
// linkerd.go), found through its internal/mesh descriptor's Product;
// the objects are *unstructured.Unstructured, so no mesh's Go types are
// needed. The app and the load are platform/kube's and loadjob's.
package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// Cell is what the mesh objects of one cell depend on.
type Cell struct {
	// Mesh is the mode's descriptor (never nil).
	Mesh *mesh.Mesh
	// Options are the cell's mesh options: MTLS, App and Policies (the
	// rules), Protocol.
	Options topology.Options
	// AppNamespace holds the app, LoadNamespace the load workers.
	AppNamespace, LoadNamespace string
	// AppPort is the port the app's pods listen on (the local lab's
	// topology.PortApp maps to it).
	AppPort int
	// LoadServiceAccount is the load workers' service account: the
	// client's identity (topology.IdentityClient).
	LoadServiceAccount string
	// Labels go on every object; AppPods selects the app's pods.
	Labels, AppPods map[string]string
}

// renderer is one mesh project's rendering.
type renderer struct {
	// objects are the mesh's own objects of the cell (nil: none).
	objects func(c Cell) []runtime.Object
	// policies render the ALLOW rules (nil: the mesh has no policies).
	policies func(c Cell, rules []rule) []runtime.Object
}

// renderers are the mesh projects' renderings by mesh.Mesh.Product; a
// mesh without one (none) has no objects.
var renderers = map[string]renderer{
	mesh.Istio:   {objects: istioObjects, policies: istioPolicies},
	mesh.Linkerd: {policies: linkerdPolicies},
}

// MeshObjects are the mesh's own objects of c (see renderers).
func MeshObjects(c Cell) []runtime.Object {
	if r := renderers[c.Mesh.Product]; r.objects != nil {
		return r.objects(c)
	}
	return nil
}

// PolicyObjects renders c's ALLOW rules (Options.Policies of them) for
// its mesh: none when Policies is 0.
func PolicyObjects(c Cell) ([]runtime.Object, error) {
	if c.Options.Policies <= 0 {
		return nil, nil
	}
	rules, err := c.rules()
	if err != nil {
		return nil, err
	}
	if r := renderers[c.Mesh.Product]; r.policies != nil {
		return r.policies(c, rules), nil
	}
	return nil, nil
}

// object is a mesh object as unstructured data.
func (c Cell) object(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(maps.Clone(c.Labels))
	return u
}

// rule is one of topology.RulesFor's ALLOW rules in cluster terms: peers with
// service account SA in Namespace (any service account when SA is empty)
// may reach Ports of the app pods (any port when empty).
type rule struct {
	Name          string // e.g. "allow-client"
	Namespace, SA string
	Ports         []int
}

// rules maps topology.RulesFor(app, Policies) to the cluster.
func (c Cell) rules() ([]rule, error) {
	var out []rule
	spiffeNS := "spiffe://" + topology.TrustDomain + "/ns/"
	for _, p := range topology.RulesFor(c.Options.App, c.Options.Policies) {
		var r rule
		_, after, ok1 := strings.Cut(p.Name, "-policy[")
		name, _, ok2 := strings.Cut(after, "]")
		if !ok1 || !ok2 || name == "" {
			return nil, fmt.Errorf("ALLOW rule %q: cannot read its name", p.Name)
		}
		r.Name = name
		switch {
		case strings.HasPrefix(p.Principal.Exact, spiffeNS):
			ns, sa, ok := strings.Cut(strings.TrimPrefix(p.Principal.Exact, spiffeNS), "/sa/")
			if !ok || ns == "" || sa == "" || strings.Contains(sa, "/") {
				return nil, fmt.Errorf("ALLOW rule %s: principal %q is not a SPIFFE workload identity", name, p.Principal.Exact)
			}
			r.Namespace, r.SA = ns, sa
		case strings.HasPrefix(p.Principal.Prefix, spiffeNS) && strings.HasSuffix(p.Principal.Prefix, "/"):
			ns := strings.TrimSuffix(strings.TrimPrefix(p.Principal.Prefix, spiffeNS), "/")
			if ns == "" || strings.Contains(ns, "/") {
				return nil, fmt.Errorf("ALLOW rule %s: principal prefix %q is not a namespace", name, p.Principal.Prefix)
			}
			r.Namespace = ns
		default:
			return nil, fmt.Errorf("ALLOW rule %s: principal %+v has no Kubernetes form", name, p.Principal)
		}
		// The local lab's one namespace holds the client and the app; here
		// the client is the load namespace's and the rest the app's.
		if r.Namespace == topology.IdentityClient.Namespace {
			r.Namespace = c.AppNamespace
			if r.SA == topology.IdentityClient.ServiceAccount {
				r.Namespace = c.LoadNamespace
			}
		}
		if r.SA == topology.IdentityClient.ServiceAccount && r.Namespace == c.LoadNamespace {
			r.SA = c.LoadServiceAccount
		}
		for _, port := range p.Ports {
			if port == topology.PortApp {
				port = c.AppPort
			}
			if !slices.Contains(r.Ports, port) {
				r.Ports = append(r.Ports, port)
			}
		}
		out = append(out, r)
	}
	return out, nil
}
