package kube

import (
	"errors"
	"maps"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"
	"github.com/meshbench/meshbench/internal/workload"
)

// LoadSpec is the load of one cell on this platform: the workers' load
// (loadjob.Spec: W workers, the pods of an Indexed Job, that each run
// `meshbench load` with their share of the rate and the connections) and
// the Spec it runs against. Work.Target "" is LoadTarget(Spec).
type LoadSpec struct {
	Spec
	Work loadjob.Spec
}

// resolved is ls's load with its Target defaulted to LoadTarget(Spec)
// (its endless answer, the static app's StreamPath, for bulk).
func (ls LoadSpec) resolved() loadjob.Spec {
	l := ls.Work
	if l.Target == "" {
		l.Target = LoadTarget(ls.Spec)
		if l.Load.Bulk() {
			l.Target = strings.TrimSuffix(l.Target, "/") + workload.StreamPath
		}
	}
	return l
}

// Validate reports every problem with ls at once (Spec's included), each
// on one line, or nil.
func (ls LoadSpec) Validate() error {
	var errs []error
	if err := ls.Spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, ls.Work.Problems()...)
	if sp := ls.Spec.WithDefaults(); ls.Work.Load.Bulk() && (sp.Mesh.App != topology.AppStatic || sp.AppImage != "" || sp.FacesChart) {
		errs = append(errs, &topology.OptionError{Field: "rate", Value: loadgen.BulkText,
			Want: "bulk reads meshbench's static app's endless answer (" + workload.StreamPath + "): the static app without --app-image"})
	}
	if len(errs) == 0 {
		if err := ls.resolved().CheckGenerator(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LoadArgs are the arguments of worker index's `meshbench load`
// (loadjob.Args, the target defaulted).
func LoadArgs(ls LoadSpec, index string) []string {
	ls.Spec = ls.Spec.WithDefaults()
	return loadjob.Args(ls.resolved(), index)
}

// LoadJob returns the load Job of ls, in the load namespace
// (loadjob.Job: an Indexed Job of Workers pods, no retries, no TTL).
// Placement: workers prefer distinct nodes, and from AntiAffinityMinNodes
// nodes must avoid app pods' nodes; from NodeSelectorMinNodes they run
// only on nodes labelled LabelNodeRole=RoleLoad. With Mesh.Placement
// same-node they must run on a node with an app pod instead (required
// pod affinity), and the app pods no longer avoid them. With sidecar meshes the
// proxy runs as a native sidecar (Kubernetes 1.29+), so the Job completes
// when the load ends: Istio's sidecar.istio.io/nativeSidecar, Linkerd's
// proxy-enable-native-sidecar (2.15+; Linkerd stable 2.14's proxy would
// keep the pod running).
func LoadJob(ls LoadSpec) (*batchv1.Job, error) {
	ls.Spec = ls.Spec.WithDefaults()
	if err := ls.Validate(); err != nil {
		return nil, err
	}
	s := ls.Spec
	p := loadjob.Pod{
		Namespace: s.LoadNamespace, Name: LoadJobName, Labels: s.labels(),
		PodLabels: s.podLabels(RoleLoad, LoadJobName), PodAnnotations: s.withThreads(maps.Clone(s.desc().Cluster.LoadPodAnnotations)),
		Image: s.Image, ServiceAccount: LoadServiceAccount,
		Resources: requests(), SecurityContext: restricted(),
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: antiAffinity(RoleLoad, s.LoadNamespace)}},
		}},
	}
	switch {
	case s.sameNode():
		// Placement same-node: beside an app pod, whatever the node count.
		p.Affinity.PodAffinity = &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{antiAffinity(RoleApp, s.AppNamespace)},
		}
	case s.NodeCount >= NodeSelectorMinNodes:
		p.NodeSelector = map[string]string{LabelNodeRole: RoleLoad}
		fallthrough
	case s.NodeCount >= AntiAffinityMinNodes:
		p.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{antiAffinity(RoleApp, s.AppNamespace)}
	}
	return loadjob.Job(ls.resolved(), p), nil
}
