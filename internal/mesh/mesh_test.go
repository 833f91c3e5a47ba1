package mesh_test

import (
	"slices"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// TestLookup checks Get, Order, Rules and the kind helpers on every known
// mode and on an unknown one.
func TestLookup(t *testing.T) {
	for _, tt := range []struct {
		name    string
		known   bool
		kind    mesh.Kind
		order   int
		rules   string
		proxies bool
	}{
		// The baseline: first in every table, no proxies.
		{"none", true, mesh.KindNone, 0, "none", false},
		// Istio's three modes, in the order help texts list them.
		{"sidecar", true, mesh.KindSidecar, 1, "sidecar", true},
		{"ambient", true, mesh.KindNodeProxy, 2, "ambient", true},
		{"waypoint", true, mesh.KindWaypoint, 3, "waypoint", true},
		// Linkerd is a sidecar mesh checked by sidecar mode's rules.
		{"linkerd", true, mesh.KindSidecar, 4, "linkerd", true}, // a local mode (netns substrate): its own rules,
		// Unknown: sorts after every known mesh, follows its own rules.
		{"cilium", false, "", 5, "cilium", false},
		// Names are case-sensitive, as plans and flags spell them.
		{"Sidecar", false, "", 5, "Sidecar", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := mesh.Get(tt.name)
			if ok != tt.known {
				t.Fatalf("Get ok %v, want %v", ok, tt.known)
			}
			if ok && (m.Name != tt.name || m.Kind != tt.kind) {
				t.Errorf("Get = %s kind %s, want kind %s", m.Name, m.Kind, tt.kind)
			}
			if got := mesh.Order(tt.name); got != tt.order {
				t.Errorf("Order %d, want %d", got, tt.order)
			}
			if got := mesh.Rules(tt.name); got != tt.rules {
				t.Errorf("Rules %q, want %q", got, tt.rules)
			}
			if got := mesh.HasProxies(tt.name); got != tt.proxies {
				t.Errorf("HasProxies %v, want %v", got, tt.proxies)
			}
			if got := mesh.Is(tt.name, mesh.KindNone); got != (tt.known && tt.kind == mesh.KindNone) {
				t.Errorf("Is none %v", got)
			}
		})
	}
}

// TestLists checks the name lists help texts and problems print.
func TestLists(t *testing.T) {
	if got, want := mesh.Names(false), []string{"none", "sidecar", "ambient", "waypoint", "linkerd"}; !slices.Equal(got, want) {
		t.Errorf("Names(false) %v, want %v", got, want)
	}
	if got, want := mesh.ClusterOnly(), []string(nil); !slices.Equal(got, want) {
		t.Errorf("ClusterOnly %v, want %v", got, want)
	}
	if got, want := mesh.Allowed(false), "allowed: none, sidecar, ambient, waypoint, linkerd"; got != want {
		t.Errorf("Allowed %q, want %q", got, want)
	}
	if got, want := mesh.ProxyContainers(), []string{"istio-proxy", "linkerd-proxy"}; !slices.Equal(got, want) {
		t.Errorf("ProxyContainers %v, want %v", got, want)
	}
	// The local lab's modes (internal/mesh/topology, which renders them) are
	// exactly the descriptors marked Local.
	var local []string
	for _, m := range topology.LocalModes {
		local = append(local, string(m))
	}
	if got := mesh.Names(true); !slices.Equal(got, local) {
		t.Errorf("Names(true) %v, want mesh.LocalModes %v", got, local)
	}
}

// TestOrderUnique checks that no two meshes claim one place.
func TestOrderUnique(t *testing.T) {
	seen := map[int]string{}
	for _, m := range mesh.All() {
		if o, dup := seen[m.Order]; dup {
			t.Errorf("%s and %s both have Order %d", o, m.Name, m.Order)
		}
		seen[m.Order] = m.Name
	}
}

// TestDescriptorsComplete checks what every descriptor must say, so that a
// new mesh's file cannot leave a field its callers rely on empty.
func TestDescriptorsComplete(t *testing.T) {
	for _, m := range mesh.All() {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Cluster
			if m.DataPlane == "" || m.ControlPlane == "" {
				t.Error("DataPlane and ControlPlane must say what runs")
			}
			if !m.Local && m.NoLocal == "" {
				t.Error("a mode with no local form must say why (NoLocal)")
			}
			if m.Local && m.RulesAs != "" {
				t.Error("a local mode follows its own rules (RulesAs empty)")
			}
			if r := m.RulesAs; r != "" && !slices.Contains(mesh.Names(true), r) {
				t.Errorf("RulesAs %q is no local mode", r)
			}
			if c.Enrolled.What == "" {
				t.Error("Enrolled.What must name the enrolment check")
			}
			if m.Kind == mesh.KindNone {
				if m.Product != "" || c.CLI != "" || len(c.Install) > 0 || len(c.Components) > 0 || !c.Enrolled.NoProxy {
					t.Error("mode none installs nothing, runs no component and has no proxy")
				}
				return
			}
			if m.Product == "" || m.SMPType == "" {
				t.Error("a mesh names its product and SMP mesh type")
			}
			if !m.Plaintext && m.NoPlaintext == "" {
				t.Error("a mesh without a plaintext variant says why (NoPlaintext)")
			}
			if c.CLI == "" || len(c.VersionArgs) == 0 || c.VersionArgs[0] != c.CLI {
				t.Errorf("CLI %q and VersionArgs %v disagree", c.CLI, c.VersionArgs)
			}
			for _, cmd := range c.Install {
				if len(cmd.Args) == 0 || cmd.Args[0] != c.CLI {
					t.Errorf("install command %v does not run %s", cmd.Args, c.CLI)
				}
			}
			if c.Namespace == "" || c.APIGroup == "" || len(c.Deployments) == 0 || len(c.Components) == 0 {
				t.Error("a mesh names its control plane's namespace, Deployments and components")
			}
			if (c.Enrolled.Container == "") == (c.Enrolled.Annotation == "") {
				t.Error("enrolment is a container or an annotation, exactly one")
			}
			if (m.Product == mesh.Istio) != (c.IstioProfile != "") {
				t.Error("every Istio mode and only they name an istioctl profile")
			}
		})
	}
}
