package kube

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// spec is a valid Spec for tests: run "test-run", 2 replicas, 2 nodes.
func spec(mode topology.Mode, app topology.App, policies int, mut ...func(*Spec)) Spec {
	o := topology.DefaultOptions()
	o.Mode, o.App, o.Policies, o.Replicas = mode, app, policies, 2
	s := Spec{RunID: "test-run", Mesh: o, NodeCount: 2}
	for _, m := range mut {
		m(&s)
	}
	return s
}

// toYAML renders objects as one multi-document YAML, as applied: no
// status, no null creationTimestamp.
func toYAML(t *testing.T, objs []runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	for i, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		delete(m, "status")
		dropNullTimestamps(m)
		y, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes()
}

func dropNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		if ts, ok := v["creationTimestamp"]; ok && ts == nil {
			delete(v, "creationTimestamp")
		}
		for _, c := range v {
			dropNullTimestamps(c)
		}
	case []any:
		for _, c := range v {
			dropNullTimestamps(c)
		}
	}
}

// TestObjectsGolden: every object of a cell, as YAML, for each mesh mode
// with the static app, faces on one mode, and policies on Istio and
// Linkerd.
func TestObjectsGolden(t *testing.T) {
	tests := []struct {
		file string
		spec Spec
	}{
		{"none-static-p0", spec(topology.ModeNone, topology.AppStatic, 0)},
		{"sidecar-static-p0", spec(topology.ModeSidecar, topology.AppStatic, 0)},
		{"ambient-static-p0", spec(topology.ModeAmbient, topology.AppStatic, 0)},
		{"waypoint-static-p0", spec(topology.ModeWaypoint, topology.AppStatic, 0)},
		{"linkerd-static-p0", spec(ModeLinkerd, topology.AppStatic, 0)},
		// Faces on 4 nodes: node selectors too.
		{"sidecar-faces-p0", spec(topology.ModeSidecar, topology.AppFaces, 0, func(s *Spec) { s.NodeCount = 4 })},
		// The seed reports' four rules.
		{"sidecar-static-p4", spec(topology.ModeSidecar, topology.AppStatic, 4)},
		{"linkerd-static-p4", spec(ModeLinkerd, topology.AppStatic, 4)},
		// The payload axis: the static app's --body-size.
		{"none-static-b1024", spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.BodySize = 1024 })},
		// Placement same-node on 4 nodes: the app pods do not avoid the
		// load (LoadJob's golden load-sidecar-same-node has the other half).
		// proxy_threads: each per-pod proxy's own annotation.
		{"sidecar-static-t2", spec(topology.ModeSidecar, topology.AppStatic, 0, func(s *Spec) { s.Mesh.ProxyThreads = 2 })},
		{"linkerd-static-t2", spec(ModeLinkerd, topology.AppStatic, 0, func(s *Spec) { s.Mesh.ProxyThreads = 2 })},
		// The waypoint's: its Gateway's infrastructure annotation
		// (ztunnel's are its DaemonSet's, set before the cell).
		{"waypoint-static-t2", spec(topology.ModeWaypoint, topology.AppStatic, 0, func(s *Spec) { s.Mesh.ProxyThreads = 2 })},
		{"sidecar-static-same-node", spec(topology.ModeSidecar, topology.AppStatic, 0, func(s *Spec) { s.NodeCount, s.Mesh.Placement = 4, topology.PlacementSameNode })},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			objs, err := AppObjects(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, "objects/"+tt.file+".yaml", toYAML(t, objs))
		})
	}
	for _, tt := range []struct {
		file string
		ls   LoadSpec
	}{
		// One worker on an unknown cluster: no required anti-affinity.
		{"load-none-w1", LoadSpec{Spec: spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.NodeCount = 0 }), Work: loadjob.Spec{Load: testLoad(t, "100"), Workers: 1, Duration: 10 * time.Second, Warmup: time.Second}}},
		// Three sidecar workers on 4 nodes, closed loop, explicit target.
		{"load-sidecar-w3", LoadSpec{Spec: spec(topology.ModeSidecar, topology.AppStatic, 0, func(s *Spec) { s.NodeCount = 4 }), Work: loadjob.Spec{Load: loadgen.ClosedLoop, Workers: 3, Duration: time.Minute, Timeout: 5 * time.Second, Connections: 48,
			Target: "http://static.meshbench-app.svc.cluster.local:8080/"}}},
		// Linkerd: its native-sidecar annotations.
		{"load-linkerd-w2", LoadSpec{Spec: spec(ModeLinkerd, topology.AppFaces, 0), Work: loadjob.Spec{Load: testLoad(t, "33.3"), Workers: 2, Duration: 30 * time.Second}}},
		// oha in two workers: --generator oha, and /tmp writable for its
		// per-request database (the root filesystem is read-only).
		{"load-none-w2-oha", LoadSpec{Spec: spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.NodeCount = 0 }), Work: loadjob.Spec{Load: testLoad(t, "200"), Workers: 2, Duration: 10 * time.Second, Warmup: time.Second, Generator: "oha"}}},
		// Placement same-node on 4 nodes: beside an app pod, no node
		// selector.
		{"load-sidecar-same-node", LoadSpec{Spec: spec(topology.ModeSidecar, topology.AppStatic, 0, func(s *Spec) { s.NodeCount, s.Mesh.Placement = 4, topology.PlacementSameNode }),
			Work: loadjob.Spec{Load: testLoad(t, "100"), Workers: 1, Duration: 10 * time.Second}}},
		{"load-linkerd-t2", LoadSpec{Spec: spec(ModeLinkerd, topology.AppStatic, 0, func(s *Spec) { s.Mesh.ProxyThreads = 2 }),
			Work: loadjob.Spec{Load: testLoad(t, "100"), Workers: 1, Duration: 10 * time.Second}}},
		// Bulk: --bulk against the static app's endless answer.
		{"load-sidecar-bulk", LoadSpec{Spec: spec(topology.ModeSidecar, topology.AppStatic, 0), Work: loadjob.Spec{Load: loadgen.Bulk, Workers: 2, Duration: 10 * time.Second, Connections: 4}}},
		// A connection per request, Poisson arrivals from seed 3 (each
		// worker adds its index in `meshbench load`).
		{"load-none-w2-k1-poisson", LoadSpec{Spec: spec(topology.ModeNone, topology.AppStatic, 0), Work: loadjob.Spec{Load: testLoad(t, "200"), Workers: 2, Duration: 10 * time.Second,
			RequestsPerConnection: 1, Arrivals: loadgen.ArrivalsPoisson, Seed: 3}}},
		// A 1-ms send tick (meshbench's engine's open loop).
		{"load-none-tick1ms", LoadSpec{Spec: spec(topology.ModeNone, topology.AppStatic, 0), Work: loadjob.Spec{Load: testLoad(t, "5000"), Workers: 1, Duration: 10 * time.Second,
			SendTick: time.Millisecond}}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			job, err := LoadJob(tt.ls)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, "objects/"+tt.file+".yaml", toYAML(t, []runtime.Object{job}))
		})
	}
}

// allSpecs is every combination of mode, app, policies and protocol that
// is valid.
func allSpecs(t *testing.T) []Spec {
	var out []Spec
	for _, mode := range []topology.Mode{topology.ModeNone, topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint, ModeLinkerd} {
		for _, app := range topology.Apps {
			for _, p := range []int{0, 1, 2, 4, 5, 7} {
				for _, proto := range []topology.Protocol{topology.ProtocolHTTP, topology.ProtocolTCP} {
					for _, nodes := range []int{0, 1, 2, 4} {
						s := spec(mode, app, p, func(s *Spec) { s.Mesh.Protocol, s.NodeCount = proto, nodes })
						if s.Validate() == nil {
							out = append(out, s)
						}
					}
				}
			}
		}
	}
	if len(out) < 100 {
		t.Fatalf("only %d valid specs", len(out))
	}
	return out
}

// TestObjectsLabels: every object carries the managed-by and run labels
// and lives in one of the run's namespaces (or is one); every pod template
// carries its role and app; names are unique per kind and namespace.
func TestObjectsLabels(t *testing.T) {
	for _, s := range allSpecs(t) {
		name := fmt.Sprintf("%s/%s/p%d/%s/n%d", s.Mesh.Mode, s.Mesh.App, s.Mesh.Policies, s.Mesh.Protocol, s.NodeCount)
		objs, err := AppObjects(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		job, err := LoadJob(LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "100"), Workers: 3, Duration: time.Second}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		objs = append(objs, job)
		seen := map[string]bool{}
		for _, o := range objs {
			m, err := meta.Accessor(o)
			if err != nil {
				t.Fatal(err)
			}
			kind := o.GetObjectKind().GroupVersionKind().Kind
			id := kind + " " + m.GetNamespace() + "/" + m.GetName()
			if kind == "" || o.GetObjectKind().GroupVersionKind().Version == "" {
				t.Errorf("%s: %s has no apiVersion/kind", name, id)
			}
			if seen[id] {
				t.Errorf("%s: %s twice", name, id)
			}
			seen[id] = true
			if l := m.GetLabels(); l[LabelManagedBy] != ManagedBy || l[LabelRun] != "test-run" {
				t.Errorf("%s: %s labels %v", name, id, l)
			}
			switch ns := m.GetNamespace(); {
			case kind == "Namespace":
				if m.GetName() != DefaultAppNamespace && m.GetName() != DefaultLoadNamespace {
					t.Errorf("%s: namespace %s", name, m.GetName())
				}
			case ns != DefaultAppNamespace && ns != DefaultLoadNamespace:
				t.Errorf("%s: %s outside the run's namespaces", name, id)
			}
			var tmpl *corev1.PodTemplateSpec
			role := RoleApp
			switch o := o.(type) {
			case *appsv1.Deployment:
				tmpl = &o.Spec.Template
				if o.Spec.Replicas == nil || *o.Spec.Replicas != 2 {
					t.Errorf("%s: %s replicas %v", name, id, o.Spec.Replicas)
				}
				sel := o.Spec.Selector.MatchLabels
				for k, v := range sel {
					if tmpl.Labels[k] != v {
						t.Errorf("%s: %s selector %v does not select its pods %v", name, id, sel, tmpl.Labels)
					}
				}
			case *batchv1.Job:
				tmpl, role = &o.Spec.Template, RoleLoad
			}
			if tmpl == nil {
				continue
			}
			l := tmpl.Labels
			if l[LabelManagedBy] != ManagedBy || l[LabelRun] != "test-run" || l[LabelRole] != role || l[LabelApp] == "" {
				t.Errorf("%s: %s pod labels %v", name, id, l)
			}
			for _, c := range tmpl.Spec.Containers {
				if c.Resources.Requests.Cpu().MilliValue() != 10 || c.Resources.Requests.Memory().Value() != 16<<20 || len(c.Resources.Limits) != 0 {
					t.Errorf("%s: %s container %s resources %v", name, id, c.Name, c.Resources)
				}
			}
		}
	}
}

// TestObjectsEnrolment: each mode enrols both namespaces its own way.
func TestObjectsEnrolment(t *testing.T) {
	tests := []struct {
		mode      topology.Mode
		appLabels map[string]string // labels of the app namespace besides ours
		loadLabel map[string]string // … of the load namespace
		ann       map[string]string // annotations of both
		kinds     []string          // mesh objects expected
	}{
		// None opts out of injection.
		{topology.ModeNone, map[string]string{"istio-injection": "disabled"}, map[string]string{"istio-injection": "disabled"},
			map[string]string{"linkerd.io/inject": "disabled"}, nil},
		{topology.ModeSidecar, map[string]string{"istio-injection": "enabled"}, map[string]string{"istio-injection": "enabled"}, nil,
			[]string{"PeerAuthentication", "PeerAuthentication"}},
		{topology.ModeAmbient, map[string]string{"istio.io/dataplane-mode": "ambient"}, map[string]string{"istio.io/dataplane-mode": "ambient"}, nil,
			[]string{"PeerAuthentication", "PeerAuthentication"}},
		// Only the app namespace uses the waypoint.
		{topology.ModeWaypoint, map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"},
			map[string]string{"istio.io/dataplane-mode": "ambient"}, nil,
			[]string{"PeerAuthentication", "PeerAuthentication", "Gateway"}},
		{ModeLinkerd, map[string]string{}, map[string]string{},
			map[string]string{"linkerd.io/inject": "enabled", "config.linkerd.io/default-inbound-policy": "all-authenticated"}, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			objs, err := AppObjects(spec(tt.mode, topology.AppStatic, 0))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, o := range objs {
				switch o := o.(type) {
				case *corev1.Namespace:
					want := tt.loadLabel
					if o.Name == DefaultAppNamespace {
						want = tt.appLabels
					}
					got := map[string]string{}
					for k, v := range o.Labels {
						if k != LabelManagedBy && k != LabelRun {
							got[k] = v
						}
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("namespace %s labels %v, want %v", o.Name, got, want)
					}
					if fmt.Sprint(o.Annotations) != fmt.Sprint(tt.ann) && len(o.Annotations)+len(tt.ann) > 0 {
						t.Errorf("namespace %s annotations %v, want %v", o.Name, o.Annotations, tt.ann)
					}
				case *unstructured.Unstructured:
					kinds = append(kinds, o.GetKind())
					if o.GetKind() == "PeerAuthentication" {
						if mode, _, _ := unstructured.NestedString(o.Object, "spec", "mtls", "mode"); mode != "STRICT" {
							t.Errorf("PeerAuthentication %s mode %s", o.GetNamespace(), mode)
						}
					}
					if o.GetKind() == "Gateway" {
						class, _, _ := unstructured.NestedString(o.Object, "spec", "gatewayClassName")
						ls, _, _ := unstructured.NestedSlice(o.Object, "spec", "listeners")
						if class != "istio-waypoint" || len(ls) != 1 || fmt.Sprint(ls[0]) != "map[name:mesh port:15008 protocol:HBONE]" ||
							o.GetLabels()["istio.io/waypoint-for"] != "service" || o.GetNamespace() != DefaultAppNamespace {
							t.Errorf("waypoint Gateway %v", o.Object)
						}
					}
				}
			}
			if !slices.Equal(kinds, tt.kinds) {
				t.Errorf("mesh objects %v, want %v", kinds, tt.kinds)
			}
		})
	}
	// Plaintext sidecars: PeerAuthentication DISABLE.
	objs, err := AppObjects(spec(topology.ModeSidecar, topology.AppStatic, 0, func(s *Spec) { s.Mesh.MTLS = false }))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "PeerAuthentication" {
			if mode, _, _ := unstructured.NestedString(u.Object, "spec", "mtls", "mode"); mode != "DISABLE" {
				t.Errorf("plaintext sidecar: PeerAuthentication mode %s", mode)
			}
		}
	}
}

// find returns the objects of kind.
func find[T runtime.Object](objs []runtime.Object) []T {
	var out []T
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

func unstructuredOf(objs []runtime.Object, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range find[*unstructured.Unstructured](objs) {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// TestObjectsProtocol: Istio picks the protocol from the port name, so tcp
// names every Service and container port tcp-…; Linkerd marks the app port
// opaque instead.
func TestObjectsProtocol(t *testing.T) {
	for _, proto := range []topology.Protocol{topology.ProtocolHTTP, topology.ProtocolTCP} {
		for _, app := range topology.Apps {
			objs, err := AppObjects(spec(topology.ModeSidecar, app, 0, func(s *Spec) { s.Mesh.Protocol = proto }))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, svc := range find[*corev1.Service](objs) {
				for _, p := range svc.Spec.Ports {
					names = append(names, svc.Name+"="+p.Name)
					if p.TargetPort.StrVal != p.Name || p.Port != AppPort {
						t.Errorf("%s port %+v", svc.Name, p)
					}
				}
			}
			for _, d := range find[*appsv1.Deployment](objs) {
				if got := d.Spec.Template.Spec.Containers[0].Ports[0].Name; !slices.Contains(names, d.Name+"="+got) {
					t.Errorf("%s container port %s matches no Service port of %v", d.Name, got, names)
				}
			}
			want := map[topology.App][]string{topology.AppStatic: {"static=http"}, topology.AppFaces: {"face=http", "smiley=http", "color=grpc"}}[app]
			if proto == topology.ProtocolTCP {
				for i, w := range want {
					svc, port, _ := strings.Cut(w, "=")
					want[i] = svc + "=tcp-" + port
				}
			}
			if !slices.Equal(names, want) {
				t.Errorf("%s %s: service ports %v, want %v", app, proto, names, want)
			}
		}
	}
	objs, err := AppObjects(spec(ModeLinkerd, topology.AppStatic, 1, func(s *Spec) { s.Mesh.Protocol = topology.ProtocolTCP }))
	if err != nil {
		t.Fatal(err)
	}
	if a := find[*corev1.Service](objs)[0].Annotations["config.linkerd.io/opaque-ports"]; a != "8080" {
		t.Errorf("linkerd tcp: Service opaque-ports %q", a)
	}
	if a := find[*appsv1.Deployment](objs)[0].Spec.Template.Annotations["config.linkerd.io/opaque-ports"]; a != "8080" {
		t.Errorf("linkerd tcp: pod opaque-ports %q", a)
	}
	if p, _, _ := unstructured.NestedString(unstructuredOf(objs, "Server")[0].Object, "spec", "proxyProtocol"); p != "opaque" {
		t.Errorf("linkerd tcp: Server proxyProtocol %q", p)
	}
}

// TestObjectsApps: the containers run what the local lab runs, calling
// each other by service name; an AppImage replaces the static server.
func TestObjectsApps(t *testing.T) {
	objs, err := AppObjects(spec(topology.ModeNone, topology.AppFaces, 0))
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, d := range find[*appsv1.Deployment](objs) {
		c := d.Spec.Template.Spec.Containers[0]
		args[d.Name] = strings.Join(c.Args, " ")
		if c.Image != DefaultImage || d.Spec.Template.Spec.ServiceAccountName != d.Name {
			t.Errorf("%s: image %s service account %s", d.Name, c.Image, d.Spec.Template.Spec.ServiceAccountName)
		}
		if c.SecurityContext == nil || !*c.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: not run as non-root", d.Name)
		}
	}
	want := map[string]string{
		"face":   "serve face --listen :8080 --smiley-url http://smiley.meshbench-app.svc.cluster.local:8080/ --color-addr color.meshbench-app.svc.cluster.local:8080",
		"smiley": "serve static --listen :8080",
		"color":  "serve grpc --listen :8080",
	}
	if fmt.Sprint(args) != fmt.Sprint(want) {
		t.Errorf("args\n%v\nwant\n%v", args, want)
	}
	if got := LoadTarget(spec(topology.ModeNone, topology.AppFaces, 0)); got != "http://face.meshbench-app.svc.cluster.local:8080/" {
		t.Errorf("faces target %s", got)
	}

	nginx := "nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000"
	s := spec(topology.ModeSidecar, topology.AppStatic, 1, func(s *Spec) { s.AppImage = nginx; s.AppNamespace = "a"; s.ClusterDomain = "example.org" })
	objs, err = AppObjects(s)
	if err != nil {
		t.Fatal(err)
	}
	d := find[*appsv1.Deployment](objs)[0]
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != nginx || c.Args != nil || c.Ports[0].ContainerPort != 80 || c.ReadinessProbe.HTTPGet.Path != "/" ||
		c.ReadinessProbe.HTTPGet.Port.IntValue() != 80 || c.SecurityContext != nil {
		t.Errorf("nginx container %+v", c)
	}
	if p := find[*corev1.Service](objs)[0].Spec.Ports[0]; p.Port != 80 {
		t.Errorf("nginx service port %d", p.Port)
	}
	if got := LoadTarget(s); got != "http://static.a.svc.example.org:80/" {
		t.Errorf("nginx target %s", got)
	}
	// The rules name the app's port, whatever it is.
	ap := unstructuredOf(objs, "AuthorizationPolicy")[0]
	if ports, _, _ := unstructured.NestedSlice(ap.Object, "spec", "rules"); !strings.Contains(fmt.Sprint(ports), "ports:[80]") {
		t.Errorf("allow-client on nginx: %v", ports)
	}
}

// TestObjectsPolicies: topology.RulesFor's rules, with the local identities
// mapped to the run's namespaces, for Istio and Linkerd.
func TestObjectsPolicies(t *testing.T) {
	objs, err := AppObjects(spec(topology.ModeWaypoint, topology.AppFaces, 6))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var onWaypoint []string // the rules bound to the waypoint
	for _, u := range unstructuredOf(objs, "AuthorizationPolicy") {
		if u.GetAPIVersion() != "security.istio.io/v1" || u.GetNamespace() != DefaultAppNamespace {
			t.Errorf("%s: %s in %s", u.GetName(), u.GetAPIVersion(), u.GetNamespace())
		}
		if name, ok := strings.CutSuffix(u.GetName(), "-waypoint"); ok && name != "allow" {
			refs, _, _ := unstructured.NestedSlice(u.Object, "spec", "targetRefs")
			if fmt.Sprint(refs) != "[map[group:gateway.networking.k8s.io kind:Gateway name:waypoint]]" {
				t.Errorf("%s: targetRefs %v, want the waypoint Gateway", u.GetName(), refs)
			}
			onWaypoint = append(onWaypoint, name)
			continue
		}
		if a, _, _ := unstructured.NestedString(u.Object, "spec", "action"); a != "ALLOW" {
			t.Errorf("%s: action %s", u.GetName(), a)
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		got[u.GetName()] = fmt.Sprint(rules)
	}
	want := map[string]string{
		"allow-client":     "[map[from:[map[source:map[principals:[cluster.local/ns/meshbench-load/sa/client]]]] to:[map[operation:map[ports:[8080]]]]]]",
		"allow-waypoint":   "[map[from:[map[source:map[principals:[cluster.local/ns/meshbench-app/sa/waypoint]]]]]]",
		"allow-monitoring": "[map[from:[map[source:map[namespaces:[monitoring]]]] to:[map[operation:map[ports:[9090]]]]]]",
		"allow-ingress":    "[map[from:[map[source:map[principals:[cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account]]]] to:[map[operation:map[ports:[8443 8080]]]]]]",
		"allow-face":       "[map[from:[map[source:map[principals:[cluster.local/ns/meshbench-app/sa/face]]]] to:[map[operation:map[ports:[8080]]]]]]",
		"allow-svc-5":      "[map[from:[map[source:map[principals:[cluster.local/ns/meshbench-app/sa/svc-5]]]] to:[map[operation:map[ports:[8080]]]]]]",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d policies, want %d: %v", len(got), len(want), got)
	}
	// In waypoint mode every rule but the waypoint's own is also the
	// waypoint's, so that it checks the client's identity.
	slices.Sort(onWaypoint)
	if want := []string{"allow-client", "allow-face", "allow-ingress", "allow-monitoring", "allow-svc-5"}; !slices.Equal(onWaypoint, want) {
		t.Errorf("rules on the waypoint %v, want %v", onWaypoint, want)
	}

	objs, err = AppObjects(spec(ModeLinkerd, topology.AppStatic, 4))
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, u := range unstructuredOf(objs, "Server") {
		port, _, _ := unstructured.NestedInt64(u.Object, "spec", "port")
		servers = append(servers, fmt.Sprintf("%s:%d", u.GetName(), port))
		if u.GetAPIVersion() != "policy.linkerd.io/v1beta3" {
			t.Errorf("Server %s", u.GetAPIVersion())
		}
	}
	if !slices.Equal(servers, []string{"app:8080", "port-9090:9090"}) {
		t.Errorf("servers %v", servers)
	}
	targets := map[string]string{}
	for _, u := range unstructuredOf(objs, "AuthorizationPolicy") {
		tr, _, _ := unstructured.NestedStringMap(u.Object, "spec", "targetRef")
		targets[u.GetName()] = tr["kind"] + "/" + tr["name"]
		refs, _, _ := unstructured.NestedSlice(u.Object, "spec", "requiredAuthenticationRefs")
		if fmt.Sprint(refs) != "[map[group:policy.linkerd.io kind:MeshTLSAuthentication name:"+u.GetName()+"]]" {
			t.Errorf("%s: refs %v", u.GetName(), refs)
		}
	}
	wantTargets := map[string]string{"allow-client": "Server/app", "allow-waypoint": "Namespace/meshbench-app",
		"allow-monitoring": "Server/port-9090", "allow-ingress": "Server/app"}
	if fmt.Sprint(targets) != fmt.Sprint(wantTargets) {
		t.Errorf("linkerd targets %v, want %v", targets, wantTargets)
	}
	authn := map[string]string{}
	for _, u := range unstructuredOf(objs, "MeshTLSAuthentication") {
		authn[u.GetName()] = fmt.Sprint(u.Object["spec"])
	}
	if authn["allow-client"] != "map[identityRefs:[map[kind:ServiceAccount name:client namespace:meshbench-load]]]" ||
		authn["allow-monitoring"] != "map[identities:[*.monitoring.serviceaccount.identity.linkerd.cluster.local]]" || len(authn) != 4 {
		t.Errorf("linkerd authentications %v", authn)
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string // one substring per problem
	}{
		{"no run id", spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.RunID = "" }), []string{`run-id "": required`}},
		{"bad run id", spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.RunID = "a b" }), []string{`run-id "a b"`}},
		{"bad namespace", spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.AppNamespace = "App_NS" }), []string{`app-namespace "App_NS"`}},
		{"same namespaces", spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.AppNamespace = DefaultLoadNamespace }), []string{"must differ"}},
		{"negative nodes", spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.NodeCount = -1 }), []string{"nodes -1"}},
		{"linkerd plaintext", spec(ModeLinkerd, topology.AppStatic, 0, func(s *Spec) { s.Mesh.MTLS = false }), []string{"mtls false: Linkerd's mTLS between meshed pods is always on"}},
		{"gateway", spec(topology.ModeSidecar, topology.AppStatic, 0, func(s *Spec) { s.Mesh.Gateway = true }), []string{"gateway true"}},
		{"attacker", spec(topology.ModeSidecar, topology.AppStatic, 0, func(s *Spec) { s.Mesh.Attacker = true }), []string{"attacker true"}},
		{"app image with faces", spec(topology.ModeNone, topology.AppFaces, 0, func(s *Spec) { s.AppImage = "nginx" }), []string{"app-image nginx: applies to the static app only"}},
		// The mesh options' own checks, with Linkerd checked as sidecar.
		{"policies without mesh", spec(topology.ModeNone, topology.AppStatic, 4), []string{"policies 4: need a mesh mode"}},
		{"linkerd faces needs allow-face", spec(ModeLinkerd, topology.AppFaces, 4), []string{"policies 4: no rule allows face's calls"}},
		{"unknown mode", spec("cilium", topology.AppStatic, 0), []string{`mode "cilium"`}},
		// No loopback limits on a cluster.
		{"many replicas", spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.Mesh.Replicas, s.Mesh.Nodes = 1000, 0 }), nil},
		{"linkerd", spec(ModeLinkerd, topology.AppFaces, 5), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			if lines := strings.Split(err.Error(), "\n"); len(lines) != len(tt.want) {
				t.Errorf("%d problems, want %d: %v", len(lines), len(tt.want), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, missing %q", err, w)
				}
			}
			if _, aerr := AppObjects(tt.spec); aerr == nil {
				t.Error("AppObjects accepted what Validate rejects")
			}
		})
	}
}

// TestLoadJob: W indexed workers, no retries, placement by node count,
// and the worker command.
func TestLoadJob(t *testing.T) {
	for _, w := range []int{1, 3} {
		for _, nodes := range []int{0, 1, 2, 3, 4} {
			t.Run(fmt.Sprintf("w%d-n%d", w, nodes), func(t *testing.T) {
				s := spec(topology.ModeAmbient, topology.AppStatic, 0, func(s *Spec) { s.NodeCount = nodes })
				job, err := LoadJob(LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "100"), Workers: w, Duration: 10 * time.Second, Warmup: 2 * time.Second, Connections: 16}})
				if err != nil {
					t.Fatal(err)
				}
				js := job.Spec
				if *js.Parallelism != int32(w) || *js.Completions != int32(w) || *js.CompletionMode != batchv1.IndexedCompletion ||
					*js.BackoffLimit != 0 || js.TTLSecondsAfterFinished != nil {
					t.Errorf("job spec %+v", js)
				}
				if job.Namespace != DefaultLoadNamespace || job.Name != LoadJobName {
					t.Errorf("job %s/%s", job.Namespace, job.Name)
				}
				pod := js.Template.Spec
				if pod.RestartPolicy != corev1.RestartPolicyNever || pod.ServiceAccountName != LoadServiceAccount {
					t.Errorf("restart %s, service account %s", pod.RestartPolicy, pod.ServiceAccountName)
				}
				aa := pod.Affinity.PodAntiAffinity
				if len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
					aa.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels[LabelRole] != RoleLoad {
					t.Errorf("workers do not spread: %+v", aa)
				}
				required := len(aa.RequiredDuringSchedulingIgnoredDuringExecution) == 1 &&
					aa.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[LabelRole] == RoleApp &&
					slices.Equal(aa.RequiredDuringSchedulingIgnoredDuringExecution[0].Namespaces, []string{DefaultAppNamespace}) &&
					aa.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey == corev1.LabelHostname
				if want := nodes >= 2; required != want || len(aa.RequiredDuringSchedulingIgnoredDuringExecution) > 1 {
					t.Errorf("required anti-affinity against app pods: %v, want %v", aa.RequiredDuringSchedulingIgnoredDuringExecution, want)
				}
				if sel := pod.NodeSelector[LabelNodeRole]; (sel == RoleLoad) != (nodes >= 4) || (sel != "" && sel != RoleLoad) {
					t.Errorf("node selector %v with %d nodes", pod.NodeSelector, nodes)
				}
				// The app side mirrors it.
				objs, err := AppObjects(s)
				if err != nil {
					t.Fatal(err)
				}
				dp := find[*appsv1.Deployment](objs)[0].Spec.Template.Spec
				appRequired := dp.Affinity != nil && len(dp.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 1 &&
					dp.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[LabelRole] == RoleLoad
				// 2 or 3 nodes: the app keeps together on one node, so the
				// workers have the others; from 4, node labels and spread.
				together := dp.Affinity != nil && dp.Affinity.PodAffinity != nil &&
					dp.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels[LabelRole] == RoleApp
				if appRequired != (nodes >= 2) || together != (nodes == 2 || nodes == 3) || (len(dp.TopologySpreadConstraints) == 1) != (nodes >= 4) {
					t.Errorf("app placement with %d nodes: affinity %+v spread %+v", nodes, dp.Affinity, dp.TopologySpreadConstraints)
				}
				if (dp.NodeSelector[LabelNodeRole] == RoleApp) != (nodes >= 4) {
					t.Errorf("app node selector %v with %d nodes", dp.NodeSelector, nodes)
				}

				c := pod.Containers[0]
				want := fmt.Sprintf("load --rate 100 --workers %d --worker-index $(JOB_COMPLETION_INDEX) --duration 10s --warmup 2s --connections 16 --progress-log --output-format json --quiet http://static.meshbench-app.svc.cluster.local:8080/", w)
				if got := strings.Join(c.Args, " "); got != want || c.Name != LoadContainer || c.Image != DefaultImage {
					t.Errorf("worker %s %s:\n%s\nwant\n%s", c.Name, c.Image, got, want)
				}
				if len(c.Env) != 1 || c.Env[0].Name != "JOB_COMPLETION_INDEX" ||
					c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
					t.Errorf("env %+v", c.Env)
				}
			})
		}
	}
}

// TestLoadJobRateSplit: what the W workers of a Job send together is the
// total rate: loadgen.WorkerShare, as each worker's `meshbench load`
// computes it, sums to the rate and differs by at most one step.
func TestLoadJobRateSplit(t *testing.T) {
	for _, c := range []struct {
		rate    string
		workers int
	}{{"100", 3}, {"33.3", 7}, {"1000", 16}, {"60/m", 4}, {"0.5", 3}} {
		r, err := loadgen.ParseRate(c.rate)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := LoadJob(LoadSpec{Spec: spec(topology.ModeNone, topology.AppStatic, 0), Work: loadjob.Spec{Load: testLoad(t, c.rate), Workers: c.workers, Duration: time.Second}}); err != nil {
			t.Fatal(err)
		}
		var sum, lo, hi float64 = 0, math.Inf(1), 0
		for i := range c.workers {
			sh := loadgen.WorkerShare(r.PerSecond(), c.workers, i)
			sum, lo, hi = sum+sh, min(lo, sh), max(hi, sh)
		}
		if math.Abs(sum-r.PerSecond()) > 1e-9 || hi-lo > loadgen.WorkerShareStep*1.000001 {
			t.Errorf("%s over %d: sum %v, spread %v", c.rate, c.workers, sum, hi-lo)
		}
	}
}

func TestLoadJobInvalid(t *testing.T) {
	s := spec(topology.ModeNone, topology.AppStatic, 0)
	tests := []struct {
		name string
		ls   LoadSpec
		want []string
	}{
		{"no workers", LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "10"), Duration: time.Second}}, []string{"workers 0"}},
		{"no rate", LoadSpec{Spec: s, Work: loadjob.Spec{Workers: 1, Duration: time.Second}}, []string{`rate ""`}},
		{"rate too low to split", LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "0.000002"), Workers: 3, Duration: time.Second}}, []string{"too low to split over 3 workers"}},
		{"unknown generator", LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "10"), Workers: 1, Duration: time.Second, Generator: "hey"}},
			[]string{"generator hey: allowed: meshbench, oha, wrk2, vegeta, fortio"}},
		// wrk2 takes whole requests per second: 100/s over 3 workers is not.
		{"wrk2 worker share not whole", LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "100"), Workers: 3, Duration: time.Second, Generator: "wrk2"}},
			[]string{"worker 0 of 3: --rate 33.333334/s: wrk2 takes whole requests per second"}},
		{"wrk2 closed loop", LoadSpec{Spec: s, Work: loadjob.Spec{Load: loadgen.ClosedLoop, Workers: 1, Duration: 10 * time.Second, Generator: "wrk2"}},
			[]string{"worker 0 of 1: --max: wrk2 has no closed loop"}},
		{"poisson closed loop", LoadSpec{Spec: s, Work: loadjob.Spec{Load: loadgen.ClosedLoop, Workers: 1, Duration: time.Second, Arrivals: loadgen.ArrivalsPoisson}},
			[]string{"arrivals poisson: only an open loop has a schedule to space"}},
		{"poisson with oha", LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "10"), Workers: 1, Duration: time.Second, Arrivals: loadgen.ArrivalsPoisson, Generator: "oha"}},
			[]string{"worker 0 of 1: --arrivals poisson"}},
		{"send tick too long", LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "10"), Workers: 1, Duration: time.Second, SendTick: time.Second}},
			[]string{"send-tick 1s: allowed: 0 (exact spacing) or 100µs to 10ms"}},
		{"send tick closed loop", LoadSpec{Spec: s, Work: loadjob.Spec{Load: loadgen.ClosedLoop, Workers: 1, Duration: time.Second, SendTick: time.Millisecond}},
			[]string{"send-tick 1ms: only an open loop has a schedule to tick"}},
		{"send tick with oha", LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "10"), Workers: 1, Duration: time.Second, SendTick: time.Millisecond, Generator: "oha"}},
			[]string{"worker 0 of 1: --send-tick 1ms: --generator oha paces by itself"}},
		{"requests per connection negative", LoadSpec{Spec: s, Work: loadjob.Spec{Load: testLoad(t, "10"), Workers: 1, Duration: time.Second, RequestsPerConnection: -1}},
			[]string{"requests-per-connection -1: allowed: 0 (keep every connection) or more"}},
		{"body size with an app image", LoadSpec{Spec: spec(topology.ModeNone, topology.AppStatic, 0, func(s *Spec) { s.BodySize, s.AppImage = 1024, "nginx" }), Work: loadjob.Spec{Load: testLoad(t, "10"), Workers: 1, Duration: time.Second}},
			[]string{"body-size 1024: applies to meshbench's static app only"}},
		{"bulk faces", LoadSpec{Spec: spec(topology.ModeNone, topology.AppFaces, 0), Work: loadjob.Spec{Load: loadgen.Bulk, Workers: 1, Duration: time.Second}},
			[]string{"rate bulk: bulk reads meshbench's static app's endless answer (/stream)"}},
		{"bulk per connection oha", LoadSpec{Spec: s, Work: loadjob.Spec{Load: loadgen.Bulk, Workers: 1, Duration: time.Second, RequestsPerConnection: 1, Generator: "oha"}},
			[]string{"requests-per-connection 1: with bulk", "generator oha: with bulk"}},
		{"body size faces", LoadSpec{Spec: spec(topology.ModeNone, topology.AppFaces, 0, func(s *Spec) { s.BodySize = 1024 }), Work: loadjob.Spec{Load: testLoad(t, "10"), Workers: 1, Duration: time.Second}},
			[]string{"body-size 1024: applies to the static app only"}},
		{"everything", LoadSpec{Spec: Spec{}, Work: loadjob.Spec{Workers: 0, Warmup: -1, Timeout: -1, Connections: -1, Target: "ftp://x/"}},
			[]string{"run-id", `mode "": allowed: none, sidecar, ambient, waypoint, linkerd`, "replicas 0", "workers 0", `rate ""`, "duration 0s", "warmup -1ns", "timeout -1ns", "connections -1", "allowed schemes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadJob(tt.ls)
			if err == nil {
				t.Fatal("LoadJob accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, missing %q", err, w)
				}
			}
			if lines := strings.Split(err.Error(), "\n"); len(lines) != len(tt.want) {
				t.Errorf("%d problems, want %d: %v", len(lines), len(tt.want), err)
			}
		})
	}
}
