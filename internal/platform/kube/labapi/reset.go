package labapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// A plan's topologies can share one API server, one after another
// (netlab: Substrate.ShareAPI). Snapshot records what the server holds
// before any lab's objects (its Baseline); Reset, at a lab's end, brings
// it back to that, but for the CRDs; ApplyCRDs, at the next lab's start,
// leaves exactly that lab's CRDs. So each lab's control plane starts
// against what a fresh API server holding that lab's objects and CRDs
// would hold, and the server's start (and the CRDs' when two labs of a
// plan take the same ones) is paid once.

// Baseline is what an API server holds before any lab's objects: every
// object the API server made itself (its namespaces, RBAC roles, flow
// schemas, its own leases) and the labels of its namespaces.
type Baseline struct {
	objects  map[objectKey]bool
	nsLabels map[string]map[string]string
}

// Objects is how many objects the baseline holds.
func (b *Baseline) Objects() int { return len(b.objects) }

// objectKey names one object: its resource, namespace and name.
type objectKey struct {
	gr        schema.GroupResource
	ns, name  string
	namespace bool // the object is namespaced
}

func (k objectKey) String() string {
	if k.ns == "" {
		return k.gr.String() + " " + k.name
	}
	return k.gr.String() + " " + k.ns + "/" + k.name
}

var (
	namespacesGR  = schema.GroupResource{Resource: "namespaces"}
	crdsGR        = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	apiServicesGR = schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}
)

// ignored: events come and go on their own (they expire), so a baseline
// event gone later is no difference, and a lab's are deleted without
// being waited for.
func ignored(gr schema.GroupResource) bool { return gr.Resource == "events" }

// Snapshot records the server's Baseline (Reset and ApplyCRDs then keep
// to it). It waits for the set of objects to hold still over two
// listings a second apart: the API server's own start-up controllers
// make some just after /readyz.
func (s *Server) Snapshot(ctx context.Context) (*Baseline, error) {
	var last map[objectKey]bool
	deadline := time.Now().Add(20 * time.Second)
	for {
		objs, err := s.listAll(ctx)
		if err != nil {
			return nil, err
		}
		keys := map[objectKey]bool{}
		for k := range objs {
			if !ignored(k.gr) {
				keys[k] = true
			}
		}
		if maps.Equal(keys, last) || time.Now().After(deadline) {
			b := &Baseline{objects: keys, nsLabels: map[string]map[string]string{}}
			for k, u := range objs {
				if k.gr == namespacesGR {
					b.nsLabels[k.name] = u.GetLabels()
				}
			}
			s.base = b
			return b, nil
		}
		last = keys
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// beyond: key k is not in the baseline and is the lab's (not the API
// server's own APIService for a CRD's group, which goes with the CRD).
func (b *Baseline) beyond(k objectKey) bool {
	return !b.objects[k] && !ignored(k.gr) && k.gr != apiServicesGR
}

// Reset deletes every object the server holds beyond its Snapshot but
// the CRDs (a lab's pods, services, service accounts, nodes, namespaces,
// custom objects, and what a control plane wrote: leases, secrets,
// config maps, a waypoint's Deployment), at once (grace period 0: no
// kubelet confirms a pod's end here), finalizes what no controller would
// (namespaces; finalizers a mesh's controller left), puts back the
// labels of the baseline's namespaces, and checks with Clean that
// nothing else is left. The CRDs stay for the next lab's ApplyCRDs,
// which keeps those it applies and deletes the others.
func (s *Server) Reset(ctx context.Context) error {
	b := s.base
	if b == nil {
		return errors.New("lab API server: Reset without a Snapshot")
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	objs, err := s.listAll(ctx)
	if err != nil {
		return err
	}
	var doomed []objectKey
	for k := range objs {
		if b.beyond(k) && k.gr != crdsGR || ignored(k.gr) && !b.objects[k] {
			doomed = append(doomed, k)
		}
	}
	// Namespaced objects first, then cluster-scoped ones, namespaces last
	// (a namespace's deletion would wait for its contents); each rank's
	// at once.
	rank := func(k objectKey) int {
		switch {
		case k.namespace:
			return 0
		case k.gr == namespacesGR:
			return 2
		}
		return 1
	}
	for r := range 3 {
		var keys []objectKey
		for _, k := range doomed {
			if rank(k) == r {
				keys = append(keys, k)
			}
		}
		if err := s.deleteAll(ctx, objs, keys); err != nil {
			return err
		}
	}
	for ns, labels := range b.nsLabels {
		if err := s.restoreLabels(ctx, ns, labels); err != nil {
			return err
		}
	}
	if err := s.waitGone(ctx, objs, doomed); err != nil {
		return err
	}
	// Whatever was made meanwhile (a controller's last write) shows here.
	_, err = s.Clean(ctx)
	return err
}

// pruneCRDs deletes the CRDs beyond the baseline that keep does not name
// and waits until they are gone (their objects with them).
func (s *Server) pruneCRDs(ctx context.Context, keep []runtime.Object) error {
	names := map[string]bool{}
	for _, obj := range keep {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			names[u.GetName()] = true
		}
	}
	ri := s.quiet().Resource(crdsGR.WithVersion("v1"))
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	objs := map[objectKey]*unstructured.Unstructured{}
	var doomed []objectKey
	for i := range list.Items {
		u := &list.Items[i]
		k := objectKey{gr: crdsGR, name: u.GetName()}
		if s.base.beyond(k) && !names[k.name] {
			objs[k] = u
			doomed = append(doomed, k)
		}
	}
	if len(doomed) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := s.deleteAll(ctx, objs, doomed); err != nil {
		return err
	}
	return s.waitGone(ctx, objs, doomed)
}

// deleteAll deletes keys (whose objects are in objs), eight at a time.
func (s *Server) deleteAll(ctx context.Context, objs map[objectKey]*unstructured.Unstructured, keys []objectKey) error {
	zero := int64(0)
	return each(keys, func(k objectKey) error {
		err := s.resource(objs[k], k).Delete(ctx, k.name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
		return nil
	})
}

// waitGone waits until keys are gone, finalizing what no controller
// here would: a namespace (the namespace controller's finalizer, once
// its contents are deleted) and an object a mesh's controller left a
// finalizer on (not a CRD: the API server's own controller ends it).
func (s *Server) waitGone(ctx context.Context, objs map[objectKey]*unstructured.Unstructured, keys []objectKey) error {
	pending := slices.Clone(keys)
	for len(pending) > 0 {
		var mu sync.Mutex
		var left []objectKey
		err := each(pending, func(k objectKey) error {
			if ignored(k.gr) {
				return nil
			}
			cur, err := s.resource(objs[k], k).Get(ctx, k.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			mu.Lock()
			left = append(left, k)
			mu.Unlock()
			if err != nil || cur.GetDeletionTimestamp() == nil {
				return nil
			}
			if k.gr == namespacesGR {
				err = s.finalizeNamespace(ctx, k.name)
			} else if len(cur.GetFinalizers()) > 0 && k.gr != crdsGR {
				_, err = s.resource(objs[k], k).Patch(ctx, k.name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("finalizing %s: %w", k, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if pending = left; len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			var names []string
			for _, k := range pending {
				names = append(names, k.String())
			}
			slices.Sort(names)
			return fmt.Errorf("lab API server: still there after deleting a lab's objects: %s", strings.Join(names, ", "))
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// Clean returns the CRDs the server holds beyond its Snapshot (Reset
// keeps them for the next lab), and an error naming the first few other
// objects it holds beyond it, or a baseline namespace whose labels
// differ.
func (s *Server) Clean(ctx context.Context) (crds []string, err error) {
	if s.base == nil {
		return nil, errors.New("lab API server: Clean without a Snapshot")
	}
	objs, err := s.listAll(ctx)
	if err != nil {
		return nil, err
	}
	var extra []string
	for k := range objs {
		switch {
		case !s.base.beyond(k):
		case k.gr == crdsGR:
			crds = append(crds, k.name)
		default:
			extra = append(extra, k.String())
		}
	}
	for ns, want := range s.base.nsLabels {
		if u, ok := objs[objectKey{gr: namespacesGR, name: ns}]; ok && !maps.Equal(u.GetLabels(), want) {
			extra = append(extra, fmt.Sprintf("namespace %s's labels %v (want %v)", ns, u.GetLabels(), want))
		}
	}
	slices.Sort(crds)
	if len(extra) == 0 {
		return crds, nil
	}
	slices.Sort(extra)
	if n := len(extra); n > 8 {
		extra = append(extra[:8], fmt.Sprintf("and %d more", n-8))
	}
	return crds, fmt.Errorf("the lab API server holds %d objects beyond its baseline: %s", len(extra), strings.Join(extra, ", "))
}

// restoreLabels sets namespace ns's labels back to labels (a lab labels
// the API server's own default namespace: Istio's use-waypoint).
func (s *Server) restoreLabels(ctx context.Context, ns string, labels map[string]string) error {
	nss := s.Client.Core.CoreV1().Namespaces()
	obj, err := nss.Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if maps.Equal(obj.Labels, labels) {
		return nil
	}
	obj.Labels = maps.Clone(labels)
	_, err = nss.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

// finalizeNamespace removes a deleted namespace's finalizers, as the
// namespace controller (not run here) does once the namespace is empty.
func (s *Server) finalizeNamespace(ctx context.Context, name string) error {
	nss := s.Client.Core.CoreV1().Namespaces()
	obj, err := nss.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.Spec.Finalizers = nil
	_, err = nss.Finalize(ctx, obj, metav1.UpdateOptions{})
	return err
}

// resource is the dynamic client for k's resource (in its namespace),
// at u's version.
func (s *Server) resource(u *unstructured.Unstructured, k objectKey) dynamic.ResourceInterface {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	r := s.quiet().Resource(gv.WithResource(k.gr.Resource))
	if k.namespace {
		return r.Namespace(k.ns)
	}
	return r
}

// listAll lists every object of every resource the server serves that
// can be listed and deleted (the preferred version of each), by key.
func (s *Server) listAll(ctx context.Context) (map[objectKey]*unstructured.Unstructured, error) {
	cfg := rest.CopyConfig(s.Client.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	type resource struct {
		gvr        schema.GroupVersionResource
		namespaced bool
	}
	var todo []resource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			todo = append(todo, resource{gvr: gv.WithResource(r.Name), namespaced: r.Namespaced})
		}
	}
	out := map[objectKey]*unstructured.Unstructured{}
	var mu sync.Mutex
	err = each(todo, func(r resource) error {
		items, err := s.quiet().Resource(r.gvr).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return nil // a CRD deleted since discovery
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", r.gvr.GroupResource(), err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range items.Items {
			u := &items.Items[i]
			out[objectKey{gr: r.gvr.GroupResource(), ns: u.GetNamespace(), name: u.GetName(), namespace: r.namespaced}] = u
		}
		return nil
	})
	return out, err
}

// quiet is a dynamic client that drops the API server's deprecation
// warnings (listing every kind lists v1 Endpoints too).
func (s *Server) quiet() dynamic.Interface {
	s.quietOnce.Do(func() {
		cfg := rest.CopyConfig(s.Client.Config)
		cfg.WarningHandler = rest.NoWarnings{}
		s.quietDyn, s.quietErr = dynamic.NewForConfig(cfg)
	})
	if s.quietErr != nil {
		return s.Client.Dynamic
	}
	return s.quietDyn
}

// each calls do for every item, eight at a time, and joins their errors.
func each[T any](items []T, do func(T) error) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := do(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
