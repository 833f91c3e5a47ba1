// Package kube is meshbench's Kubernetes platform: the same cells as the
// local lab, on a real cluster from a kubeconfig. meshbench creates its own
// namespaces (labelled with the run), installs or verifies the mesh with
// its own CLI, runs the app as Deployments and the load as a Job of
// meshbench load workers, samples metrics.k8s.io, collects the workers'
// JSON results from their logs, merges them exactly and writes the same
// results directory as the local lab, so every report works unchanged.
package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/meshes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// ConnectOptions choose the cluster: the usual kubeconfig rules
// (--kubeconfig, else $KUBECONFIG, else ~/.kube/config) and a context
// (empty: the current one).
type ConnectOptions struct {
	Kubeconfig string
	Context    string
	// Timeout bounds every API request (0: 30 s).
	Timeout time.Duration
}

// Cluster is a connection to one cluster.
type Cluster struct {
	Config  *rest.Config
	Core    kubernetes.Interface
	Dynamic dynamic.Interface
	Metrics metricsclient.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	// Context is the kubeconfig context used, Server the API server's URL
	// and Version its version (e.g. v1.36.3).
	Context, Server, Version string
}

// Connect reads the kubeconfig and checks that the API server answers.
func Connect(ctx context.Context, o ConnectOptions) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	cfg.Timeout = o.Timeout
	cfg.UserAgent = "meshbench"
	// The defaults (5 QPS, burst 10) make a 90-replica setup crawl.
	cfg.QPS, cfg.Burst = 50, 100
	c := &Cluster{Config: cfg, Context: raw.CurrentContext, Server: cfg.Host}
	if o.Context != "" {
		c.Context = o.Context
	}
	if c.Core, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Metrics, err = metricsclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("API server %s (context %q) does not answer: %w", cfg.Host, c.Context, err)
	}
	c.Version = v.GitVersion
	return c, nil
}

// FieldManager is the server-side apply field manager of everything
// meshbench applies.
const FieldManager = "meshbench"

// Apply creates or updates objs with server-side apply, in order. Typed
// objects (a Deployment) and unstructured ones (a mesh's CRDs) are both
// accepted; a kind the cluster does not serve is an error naming it and
// the mesh that would have installed it.
func (c *Cluster) Apply(ctx context.Context, objs []runtime.Object) error {
	for _, obj := range objs {
		u, gvk, err := toUnstructured(obj)
		if err != nil {
			return err
		}
		ri, err := c.resource(gvk.GroupVersion().WithKind(gvk.Kind), u.GetNamespace())
		if err != nil {
			return err
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, objectName(u), err)
		}
	}
	return nil
}

// resource is the dynamic client for kind gvk in namespace ns.
func (c *Cluster) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// The discovery cache may predate a mesh install: refresh once.
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("the cluster does not serve %s (%s)%s", gvk.Kind, gvk.GroupVersion(), crdHint(gvk.Group))
		}
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// crdHint names what installs a group's CRDs: the mesh whose descriptor
// claims the group, or the Gateway API.
func crdHint(group string) string {
	if group == "gateway.networking.k8s.io" {
		return ": are the Gateway API CRDs installed (Istio ambient's waypoints need them)?"
	}
	for _, m := range meshes.All() {
		if g := m.Cluster.APIGroup; g != "" && strings.HasSuffix(group, g) {
			return ": is " + m.Product + " installed?"
		}
	}
	return ""
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, schema.GroupVersionKind, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		kinds, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil || len(kinds) == 0 {
			return nil, gvk, fmt.Errorf("object %T: unknown kind: %v", obj, err)
		}
		gvk = kinds[0]
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, gvk, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, gvk, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	// Server-side apply rejects a status and a creationTimestamp of null.
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, gvk, nil
}

func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// NamespaceInUseError says a namespace meshbench would use holds things
// it did not create.
type NamespaceInUseError struct {
	Namespace string
	Foreign   []string // kind/name of what meshbench did not create
}

func (e *NamespaceInUseError) Error() string {
	more := ""
	if len(e.Foreign) > 3 {
		more = fmt.Sprintf(" and %d more", len(e.Foreign)-3)
	}
	return fmt.Sprintf("namespace %s holds workloads meshbench did not create (%s%s): never benchmark on a cluster that is in use; choose other namespaces (--namespace-prefix) or pass --allow-foreign-workloads",
		e.Namespace, strings.Join(e.Foreign[:min(3, len(e.Foreign))], ", "), more)
}

// CheckNamespaces returns a *NamespaceInUseError for the first of names
// that exists and holds pods, Deployments, DaemonSets, StatefulSets or Jobs
// without meshbench's managed-by label. A missing namespace, or one
// holding only meshbench's objects, is fine.
func (c *Cluster) CheckNamespaces(ctx context.Context, names []string) error {
	for _, ns := range names {
		if _, err := c.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		var foreign []string
		add := func(kind string, metas []metav1.Object) {
			for _, m := range metas {
				if m.GetLabels()[LabelManagedBy] != ManagedBy {
					foreign = append(foreign, kind+"/"+m.GetName())
				}
			}
		}
		apps := c.Core.AppsV1()
		if l, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
			add("pod", metasOf(l.Items))
		} else {
			return err
		}
		if l, err := apps.Deployments(ns).List(ctx, metav1.ListOptions{}); err == nil {
			add("deployment", metasOf(l.Items))
		} else {
			return err
		}
		if l, err := apps.DaemonSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
			add("daemonset", metasOf(l.Items))
		} else {
			return err
		}
		if l, err := apps.StatefulSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
			add("statefulset", metasOf(l.Items))
		} else {
			return err
		}
		if l, err := c.Core.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{}); err == nil {
			add("job", metasOf(l.Items))
		} else {
			return err
		}
		if len(foreign) > 0 {
			return &NamespaceInUseError{Namespace: ns, Foreign: foreign}
		}
	}
	return nil
}

// metasOf gives the object metadata of a list's items.
func metasOf[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// DeleteRun deletes every namespace labelled with run ID (and so
// everything in them) and waits until they are gone, up to timeout. It
// deletes nothing else.
func (c *Cluster) DeleteRun(ctx context.Context, runID string, timeout time.Duration) error {
	sel := LabelRun + "=" + runID + "," + LabelManagedBy + "=" + ManagedBy
	nss, err := c.Core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	fg := metav1.DeletePropagationForeground
	for _, ns := range nss.Items {
		err := c.Core.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{PropagationPolicy: &fg,
			Preconditions: &metav1.Preconditions{UID: &ns.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		left, err := c.Core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		if len(left.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var names []string
			for _, ns := range left.Items {
				names = append(names, ns.Name+" ("+string(ns.Status.Phase)+")")
			}
			return fmt.Errorf("namespaces of run %s still there after %v: %s", runID, timeout, strings.Join(names, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
