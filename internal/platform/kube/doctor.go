package kube

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/sys/preflight"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/platform/kube/client"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
)

// DoctorOptions is what a preflight checks for.
type DoctorOptions struct {
	Connect ConnectOptions
	// Meshes are the mesh modes the user wants to run; empty: every CLI
	// is looked for, none required, and no mesh is verified.
	Meshes []string
	// InstallMesh: the run will install the meshes itself (`run
	// --install-mesh`), so the CLI of every mesh in Meshes is required.
	// Otherwise a missing CLI is only a warning and the mesh already
	// installed on the cluster is verified instead (VerifyMesh), one check
	// per mesh mode in Meshes.
	InstallMesh bool
	// Nodes is the number of schedulable nodes the placement needs (load
	// and app apart: 2).
	Nodes int
	// Namespaces are the namespaces meshbench would create.
	Namespaces []string
	// CLIs are the mesh CLIs to check instead of those on PATH, by name
	// ("istioctl", "linkerd"): run's --istio-build and --linkerd-build give
	// their builds' own.
	CLIs map[string]string
	// MetricsSource is the run's --metrics-source ("": auto): the doctor
	// says which source a run will use (ChooseSource).
	MetricsSource string
	// MetricsMaxAge is how old the newest node metric may be (0: 2 min).
	MetricsMaxAge time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// DoctorCheck is one line of the preflight table.
type DoctorCheck = preflight.Result

// doctor is what the checks share: the options, and the cluster and the
// resource source once found.
type doctor struct {
	o DoctorOptions
	c *Cluster
	// src and srcCheck are sourceCheck's, run once (the metrics check
	// asks it too).
	src      string
	srcCheck *DoctorCheck
}

// source runs sourceCheck once.
func (d *doctor) source(ctx context.Context) (DoctorCheck, string) {
	if d.srcCheck == nil {
		chk, src := sourceCheck(ctx, d.c, d.o.MetricsSource)
		d.srcCheck, d.src = &chk, src
	}
	return *d.srcCheck, d.src
}

// doctorChecks is the kube platform's preflight, in the order doctor
// prints it. Without an API server every check that needs one is a
// failed row "skipped: no API server".
var doctorChecks = []preflight.Check[*doctor]{
	{Category: "cluster", Name: "API server reachable", Fatal: true, SkipReason: "no API server",
		Description: "the kubeconfig's API server answers (its URL, Kubernetes version and context)",
		Run: preflight.One(func(ctx context.Context, d *doctor) DoctorCheck {
			c, err := Connect(ctx, d.o.Connect)
			if err != nil {
				return DoctorCheck{Name: "API server reachable", Detail: err.Error()}
			}
			d.c = c
			return DoctorCheck{Name: "API server reachable", OK: true,
				Detail: fmt.Sprintf("%s, Kubernetes %s, context %q", c.Server, c.Version, c.Context)}
		})},
	{Category: "cluster", Name: "metrics API (metrics.k8s.io)",
		Description: "metrics.k8s.io serves node metrics, newer than DoctorOptions.MetricsMaxAge (only a warning when runs read the kubelet's counters)",
		Run: preflight.One(func(ctx context.Context, d *doctor) DoctorCheck {
			mc := metricsCheck(ctx, d.c, d.o)
			if _, src := d.source(ctx); src == SourceKubelet && !mc.OK && !mc.Warn {
				// The run reads the kubelet's counters; metrics.k8s.io is
				// only its cross-check.
				mc.Warn, mc.Detail = true, mc.Detail+"; only the cross-check: runs use the kubelet's counters"
			}
			return mc
		})},
	{Category: "cluster", Name: "resource source",
		Description: "where a run's CPU and memory will come from (ChooseSource): the kubelet's counters, or metrics.k8s.io (a warning)",
		Run: preflight.One(func(ctx context.Context, d *doctor) DoctorCheck {
			chk, _ := d.source(ctx)
			return chk
		})},
	{Category: "cluster", Name: "nodes", Hint: "add nodes, or lower --nodes",
		Description: "enough nodes are ready and schedulable for the placement (DoctorOptions.Nodes)",
		Run:         preflight.One(func(ctx context.Context, d *doctor) DoctorCheck { return nodesCheck(ctx, d.c, d.o.Nodes) })},
	{Category: "meshes", Name: "mesh CLIs", Independent: true,
		Description: "one row per mesh CLI (istioctl, linkerd): found and its version; required only for meshes to be installed",
		Run: func(ctx context.Context, d *doctor) []DoctorCheck {
			return cliChecks(ctx, d.o.Meshes, d.o.InstallMesh, d.o.CLIs)
		}},
	{Category: "meshes", Name: "mesh installed", Hint: "install it, or run with --install-mesh",
		Description: "one row per mesh asked for, unless the run installs them: it runs on the cluster as a run needs it (VerifyMesh)",
		Rows: func(d *doctor) []string {
			var out []string
			if !d.o.InstallMesh {
				for _, m := range verifiedMeshes(d.o.Meshes) {
					out = append(out, meshCheckName(m))
				}
			}
			return out
		},
		Run: func(ctx context.Context, d *doctor) []DoctorCheck {
			if d.o.InstallMesh {
				return nil
			}
			return installedMeshChecks(ctx, d.c, d.o.Meshes)
		}},
	{Category: "run", Name: "namespaces free",
		Description: "the namespaces a run creates do not exist yet (CheckNamespaces)",
		Run: preflight.One(func(ctx context.Context, d *doctor) DoctorCheck {
			chk := DoctorCheck{Name: "namespaces free", OK: true, Detail: strings.Join(d.o.Namespaces, ", ") + ": free"}
			if err := d.c.CheckNamespaces(ctx, d.o.Namespaces); err != nil {
				chk.OK, chk.Detail = false, err.Error()
			}
			return chk
		})},
	{Category: "run", Name: "RBAC", Hint: "grant them to the kubeconfig's user",
		Description: "the kubeconfig's user may do what a run does (SelfSubjectAccessReviews of rbacVerbs)",
		Run:         preflight.One(func(ctx context.Context, d *doctor) DoctorCheck { return rbacCheck(ctx, d.c) })},
	{Category: "run", Name: "RBAC for faults", Hint: "grant them to the kubeconfig's user, or run no faults",
		Description: "the kubeconfig's user may do what a fault does (SelfSubjectAccessReviews of faultVerbs); a warning, since only plans with faults need it",
		Run:         preflight.One(func(ctx context.Context, d *doctor) DoctorCheck { return faultRBACCheck(ctx, d.c) })},
}

// Doctor runs the preflight checks (doctorChecks): API reachable, metrics
// API available and fresh, enough nodes, mesh CLIs and versions, the
// installed meshes (unless they are to be installed), namespaces free,
// RBAC. It returns a row for every check; the cluster is nil when the API
// could not be reached (the checks that need it are then skipped, and
// say so).
func Doctor(ctx context.Context, o DoctorOptions) ([]DoctorCheck, *Cluster) {
	if o.MetricsMaxAge == 0 {
		o.MetricsMaxAge = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	d := &doctor{o: o}
	return preflight.Run(ctx, doctorChecks, d), d.c
}

func metricsCheck(ctx context.Context, c *Cluster, o DoctorOptions) DoctorCheck {
	chk := DoctorCheck{Name: "metrics API (metrics.k8s.io)"}
	nm, err := c.Metrics.MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{})
	if err != nil {
		chk.Detail = "not available: " + oneLine(err.Error()) + " (is metrics-server installed?)"
		return chk
	}
	if len(nm.Items) == 0 {
		// Available but empty: a new metrics-server (two scrapes first),
		// or nodes whose kubelet reports nothing; not fatal yet.
		chk.Warn, chk.Detail = true, "available, but no node metrics yet (metrics-server needs two scrapes; check again in a minute)"
		return chk
	}
	var newest time.Time
	for _, m := range nm.Items {
		if m.Timestamp.After(newest) {
			newest = m.Timestamp.Time
		}
	}
	age := o.Now().Sub(newest)
	chk.OK = age <= o.MetricsMaxAge
	chk.Detail = fmt.Sprintf("%d node metrics, newest %s old (window %s)", len(nm.Items), age.Round(time.Second), nm.Items[0].Window.Duration)
	if !chk.OK {
		chk.Detail += fmt.Sprintf(": stale, older than %s", o.MetricsMaxAge)
	}
	return chk
}

// sourceCheck says where a run's CPU and memory will come from: the
// kubelet's counters (nodes/proxy get allowed and /metrics/resource
// answering) or metrics.k8s.io. Falling back to metrics.k8s.io is a
// warning; asking for the counters where they cannot be read fails.
func sourceCheck(ctx context.Context, c *Cluster, want string) (DoctorCheck, string) {
	if want == "" {
		want = SourceAuto
	}
	chk := DoctorCheck{Name: "resource source"}
	src, why, err := ChooseSource(ctx, c, want)
	switch {
	case err != nil:
		chk.Detail = oneLine(err.Error())
	case src == SourceKubelet:
		chk.OK, chk.Detail = true, "the kubelet's counters ("+why+")"
	case want == SourceMetricsAPI:
		chk.OK, chk.Detail = true, "metrics.k8s.io ("+why+")"
	default:
		chk.Warn, chk.Detail = true, "metrics.k8s.io, windowed averages ("+why+"); grant get on nodes/proxy for exact counters"
	}
	return chk, src
}

func nodesCheck(ctx context.Context, c *Cluster, need int) DoctorCheck {
	chk := DoctorCheck{Name: "nodes"}
	nodes, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		chk.Detail = err.Error()
		return chk
	}
	ready := 0
	for _, n := range nodes.Items {
		if client.NodeReady(&n) && !n.Spec.Unschedulable {
			ready++
		}
	}
	chk.OK = ready >= max(need, 1)
	chk.Detail = fmt.Sprintf("%d of %d ready and schedulable", ready, len(nodes.Items))
	if need > 0 {
		chk.Detail += fmt.Sprintf(", %d needed (load and app on different nodes)", need)
	}
	return chk
}

// cliChecks looks for the mesh CLIs: required (fails) for a mesh asked
// for when it is to be installed, optional (a warning) otherwise;
// istioctl, when set, is the istioctl to run instead of PATH's.
func cliChecks(ctx context.Context, modes []string, installing bool, clis map[string]string) []DoctorCheck {
	want := map[string][]string{}
	for _, m := range modes {
		if cli := install.MeshCLI(m); cli != "" {
			want[cli] = append(want[cli], m)
		}
	}
	var out []DoctorCheck
	// One probe per CLI any mesh installs with, asked through the first
	// mode that uses it.
	type cliProbe struct{ cli, mode string }
	var probes []cliProbe
	for _, m := range mesh.All() {
		cli := m.Cluster.CLI
		if cli != "" && !slices.ContainsFunc(probes, func(p cliProbe) bool { return p.cli == cli }) {
			probes = append(probes, cliProbe{cli, m.Name})
		}
	}
	for _, probe := range probes {
		chk := DoctorCheck{Name: probe.cli}
		v, err := install.CLIVersion(ctx, probe.mode)
		if bin := clis[probe.cli]; bin != "" {
			chk.Name = probe.cli + " (" + bin + ")"
			v, err = install.CLIVersionAt(ctx, probe.mode, bin)
		}
		switch {
		case err == nil:
			chk.OK, chk.Detail = true, "version "+v
		case len(want[probe.cli]) == 0:
			chk.Warn, chk.Detail = true, err.Error()+"; not needed unless a mesh must be installed"
		case !installing:
			detail := err.Error()
			if _, lerr := exec.LookPath(probe.cli); lerr != nil {
				detail = probe.cli + " not found on PATH"
			}
			chk.Warn, chk.Detail = true, detail+"; needed only with --install-mesh (the installed mesh is verified instead: "+
				strings.Join(want[probe.cli], ", ")+")"
		default:
			chk.Detail = err.Error()
		}
		out = append(out, chk)
	}
	return out
}

// verifiedMeshes are the modes of meshes whose installation a doctor
// verifies: each asked for once, none left out.
func verifiedMeshes(modes []string) []string {
	var out []string
	for _, m := range modes {
		if !mesh.Is(m, mesh.KindNone) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func meshCheckName(mode string) string { return "mesh " + mode + " installed" }

// installedMeshChecks verifies, for every mesh asked for, that it runs on
// the cluster as a run without --install-mesh needs it (VerifyMesh): a
// failed check says what is missing.
func installedMeshChecks(ctx context.Context, c *Cluster, meshes []string) []DoctorCheck {
	var out []DoctorCheck
	for _, m := range verifiedMeshes(meshes) {
		chk := DoctorCheck{Name: meshCheckName(m)}
		checks, err := c.VerifyMesh(ctx, m)
		if err != nil {
			chk.Detail = oneLine(err.Error())
		} else {
			var found []string
			for _, x := range checks {
				found = append(found, x.What+": "+x.Detail)
			}
			chk.OK, chk.Detail = true, strings.Join(found, "; ")
		}
		out = append(out, chk)
	}
	return out
}

// rbacVerbs are what a run needs to do, as SelfSubjectAccessReviews.
var rbacVerbs = []authv1.ResourceAttributes{
	{Verb: "create", Resource: "namespaces"},
	{Verb: "delete", Resource: "namespaces"},
	{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "meshbench-app"},
	{Verb: "create", Resource: "services", Namespace: "meshbench-app"},
	{Verb: "create", Group: "batch", Resource: "jobs", Namespace: "meshbench-load"},
	{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "meshbench-load"},
	{Verb: "list", Resource: "pods"},
	{Verb: "list", Group: "metrics.k8s.io", Resource: "pods"},
	{Verb: "list", Group: "metrics.k8s.io", Resource: "nodes"},
	{Verb: "patch", Resource: "nodes"},
}

// faultVerbs are what a fault cell needs besides rbacVerbs: kill deletes
// pods (the app's, the mesh's control plane and node proxies),
// noisy-neighbour creates its hog pod, slow-replica port-forwards to a
// replica's control port, cpu-limit resizes a pod in place.
var faultVerbs = []authv1.ResourceAttributes{
	{Verb: "delete", Resource: "pods"},
	{Verb: "create", Resource: "pods", Namespace: "meshbench-app"},
	{Verb: "create", Resource: "pods", Subresource: "portforward", Namespace: "meshbench-app"},
	{Verb: "update", Resource: "pods", Subresource: "resize", Namespace: "meshbench-app"},
}

func rbacCheck(ctx context.Context, c *Cluster) DoctorCheck {
	return accessCheck(ctx, c, "RBAC", rbacVerbs, false)
}

// faultRBACCheck is rbacCheck for faultVerbs: a denial is a warning.
func faultRBACCheck(ctx context.Context, c *Cluster) DoctorCheck {
	return accessCheck(ctx, c, "RBAC for faults", faultVerbs, true)
}

// accessCheck asks the API server whether the kubeconfig's user may do
// each of verbs; a denial fails the row, or warns when warnOnly.
func accessCheck(ctx context.Context, c *Cluster, name string, verbs []authv1.ResourceAttributes, warnOnly bool) DoctorCheck {
	chk := DoctorCheck{Name: name}
	var denied []string
	for _, ra := range verbs {
		ra := ra
		r, err := c.Core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}, metav1.CreateOptions{})
		if err != nil {
			chk.Detail = "cannot ask: " + err.Error()
			return chk
		}
		if !r.Status.Allowed {
			denied = append(denied, describeAccess(ra))
		}
	}
	sort.Strings(denied)
	if len(denied) > 0 {
		chk.Warn, chk.Detail = warnOnly, "denied: "+strings.Join(denied, ", ")
		if warnOnly {
			chk.Detail += " (plans with faults cannot run)"
		}
		return chk
	}
	chk.OK, chk.Detail = true, fmt.Sprintf("all %d permissions meshbench needs are granted", len(verbs))
	return chk
}

func describeAccess(ra authv1.ResourceAttributes) string {
	r := ra.Resource
	if ra.Subresource != "" {
		r += "/" + ra.Subresource
	}
	if ra.Group != "" {
		r += "." + ra.Group
	}
	return ra.Verb + " " + r
}
