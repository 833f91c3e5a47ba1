package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/workload"
)

// A cell's fault (Settings.Fault) on a cluster: scheduled when the load
// workers' measured window opens (their containers seen running, plus the
// warm-up), stopped when the load Job ends, whatever ended it, and
// recorded in the manifest (options.fault_record) as on the lab. A kill
// deletes the part's pod with no grace period (the kubelet still sends
// SIGTERM and waits at least 2 s before SIGKILL) and Kubernetes brings it
// back (the DaemonSet, the Deployment); the fault lasts until the
// replacement is Ready, and the record says how long that took. A CPU
// limit resizes the part's container in place and back (LimitPod). The
// parts are pods found from the mesh descriptor's mesh.PartSpec: the
// sidecar is the app's first replica's pod (a sidecar's death on a
// cluster is its pod's: meshbench reaches no node's container runtime, so
// it cannot kill the proxy container alone), the node proxy the ztunnel
// pod on that replica's node, the waypoint and the control plane the
// first of their pods. The noisy neighbour is a pod of its own
// (faulthog.go), a slow replica is reached through a port-forward
// (faultslow.go).

// faultPollEvery is how often a kill's wait for the replacement pod looks:
// the resolution of the recovery time it records.
const faultPollEvery = 100 * time.Millisecond

// faultTarget is a running cell on a cluster as a fault.PodTarget.
type faultTarget struct{ r *run }

var (
	_ fault.PodTarget  = faultTarget{}
	_ fault.PodLimiter = faultTarget{}
)

// errPartIsPod says why a cluster's parts have no process here.
var errPartIsPod = errors.New("on a cluster a mesh part is a pod, not a process of this machine")

func (faultTarget) PartPID(mesh.Part) (int, string, error)       { return 0, "", errPartIsPod }
func (faultTarget) Kill(context.Context, mesh.Part) (int, error) { return 0, errPartIsPod }
func (faultTarget) Replicas(string) []workload.Control           { return nil }

// partPods is where part p of the cell's mesh runs: the namespace and
// selector of its pods, the node they must be on ("" any), and the pod a
// fault hits now.
type partPods struct {
	ns, selector, node string
	// container is the part's container in pod (mesh.PartSpec.Container).
	container string
	pod       corev1.Pod
}

// servedPod is the entry service's first Ready replica (by name): the pod
// whose parts a fault hits.
func (c *Cluster) servedPod(ctx context.Context, s Spec) (corev1.Pod, string, error) {
	s = s.WithDefaults()
	sel := LabelRole + "=" + RoleApp + "," + LabelApp + "=" + s.appServices()[0].name
	pods, err := c.readyPods(ctx, s.AppNamespace, sel, "")
	if err != nil {
		return corev1.Pod{}, "", err
	}
	if len(pods) == 0 {
		return corev1.Pod{}, "", fmt.Errorf("no Ready app pod (%s) in namespace %s", sel, s.AppNamespace)
	}
	return pods[0], sel, nil
}

// readyPods are ns's Ready pods of selector sel (on node, unless ""),
// not being deleted, sorted by name.
func (c *Cluster) readyPods(ctx context.Context, ns, sel, node string) ([]corev1.Pod, error) {
	l, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing pods %s in %s: %w", sel, ns, err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && (node == "" || p.Spec.NodeName == node) && podIsReady(&p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// podIsReady reports the pod's Ready condition.
func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// partPods finds part p of mesh mode in the cell of spec s.
func (c *Cluster) partPods(ctx context.Context, s Spec, p mesh.Part) (partPods, error) {
	s = s.WithDefaults()
	m, ok := mesh.Get(string(s.Mesh.Mode))
	if !ok {
		return partPods{}, fmt.Errorf("mesh %s is not described", s.Mesh.Mode)
	}
	spec, ok := m.Parts[p]
	if !ok {
		return partPods{}, fmt.Errorf("mesh %s has no %s (its parts: %s)", m.Name, p, m.PartList())
	}
	served, appSel, err := c.servedPod(ctx, s)
	if err != nil {
		return partPods{}, err
	}
	pp := partPods{ns: spec.Namespace, selector: spec.Selector, container: spec.Container}
	if pp.ns == "" {
		pp.ns = s.AppNamespace
	}
	switch spec.Scope {
	case mesh.ScopeAppPod:
		pp.ns, pp.selector, pp.pod = s.AppNamespace, appSel, served
		return pp, nil
	case mesh.ScopeAppNode:
		pp.node = served.Spec.NodeName
	}
	pods, err := c.readyPods(ctx, pp.ns, pp.selector, pp.node)
	if err != nil {
		return partPods{}, err
	}
	if len(pods) == 0 {
		where := ""
		if pp.node != "" {
			where = " on node " + pp.node + " (the server's)"
		}
		return partPods{}, fmt.Errorf("no Ready pod of the %s (%s, %s in namespace %s)%s", p, spec.What, pp.selector, pp.ns, where)
	}
	pp.pod = pods[0]
	return pp, nil
}

// KillPod deletes the pod of part p with no grace period and waits until
// a pod that was not there before the delete is Ready in its place (on
// the same node for a node's part). The drain does not wait for the
// deleted pod's samples.
func (t faultTarget) KillPod(ctx context.Context, p mesh.Part, deleted func(string)) (string, error) {
	rep, err := t.r.c.KillPart(ctx, t.r.o.Spec, p, func(old string) {
		t.r.mu.Lock()
		t.r.deleted = append(t.r.deleted, old)
		t.r.mu.Unlock()
		deleted(old)
	})
	if rep != "" {
		t.r.mu.Lock()
		t.r.replacements = append(t.r.replacements, rep)
		t.r.mu.Unlock()
	}
	return rep, err
}

// excuseReplacements takes the failed mTLS checks of pods a fault made (a
// kill's replacement, "namespace/name" in ns) off the cell's account: such
// a pod may have become Ready too late in the window to serve anything.
// The checks stay, said so.
func excuseReplacements(checks []Check, ns string, replacements []string) ([]Check, error) {
	for i, c := range checks {
		for _, rep := range replacements {
			pns, name, _ := strings.Cut(rep, "/")
			if pns == ns && !c.OK && strings.HasPrefix(c.What, "pod "+name+":") {
				checks[i].OK = true
				checks[i].Detail += " (a pod a fault made in the window: it may have served nothing; not held against the cell)"
			}
		}
	}
	return checks, failed(checks)
}

// KillPart is KillPod for the cell of spec s.
func (c *Cluster) KillPart(ctx context.Context, s Spec, p mesh.Part, deleted func(old string)) (replacement string, err error) {
	pp, err := c.partPods(ctx, s, p)
	if err != nil {
		return "", err
	}
	l, err := c.Core.CoreV1().Pods(pp.ns).List(ctx, metav1.ListOptions{LabelSelector: pp.selector})
	if err != nil {
		return "", err
	}
	before := map[types.UID]bool{}
	for _, q := range l.Items {
		before[q.UID] = true
	}
	uid := pp.pod.UID
	zero := int64(0)
	old := pp.ns + "/" + pp.pod.Name
	if err := c.Core.CoreV1().Pods(pp.ns).Delete(ctx, pp.pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return "", fmt.Errorf("deleting pod %s: %w", old, err)
	}
	deleted(old)
	err = wait.PollUntilContextCancel(ctx, faultPollEvery, true, func(ctx context.Context) (bool, error) {
		pods, err := c.readyPods(ctx, pp.ns, pp.selector, pp.node)
		if err != nil {
			return false, nil // the API may blink; the context bounds the wait
		}
		for _, q := range pods {
			if !before[q.UID] {
				replacement = pp.ns + "/" + q.Name
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for a pod Ready in the place of %s: %w", old, err)
	}
	return replacement, nil
}

// workersRunning waits until the load Job's workers' containers all run
// and returns when it saw them: the measured window opens a warm-up later.
func (c *Cluster) workersRunning(ctx context.Context, ns, job string, workers int) (time.Time, error) {
	var seen time.Time
	err := wait.PollUntilContextCancel(ctx, faultPollEvery, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err != nil {
			return false, nil
		}
		n := 0
		for i := range pods.Items {
			if containerStarted(&pods.Items[i], LoadContainer) {
				n++
			}
		}
		if n >= workers {
			seen = time.Now()
			return true, nil
		}
		return false, nil
	})
	return seen, err
}

// cellFault is the cell's fault while the load Job runs: scheduled once
// the workers run (startFault), stopped when the Job ends (stop).
type cellFault struct {
	cancel  context.CancelFunc
	running chan *fault.Running
}

// startFault schedules the cell's fault at its time in the workers'
// measured window; nil without a fault.
func (r *run) startFault(ctx context.Context, job string) *cellFault {
	o := r.o
	if o.Fault.Zero() {
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	cf := &cellFault{cancel: cancel, running: make(chan *fault.Running, 1)}
	go func() {
		seen, err := r.c.workersRunning(wctx, o.Spec.LoadNamespace, job, o.Workers)
		if err != nil {
			cf.running <- nil
			return
		}
		cf.running <- fault.Schedule(ctx, o.Fault, faultTarget{r}, seen.Add(o.Warmup), func(s string) { r.logf("%s", s) })
	}()
	return cf
}

// stop undoes the fault (a kill's replacement waited for) and records it
// in the manifest; a fault that failed marks the cell invalid.
func (cf *cellFault) stop(r *run) {
	if cf == nil {
		return
	}
	cf.cancel()
	fr := <-cf.running
	rec := fault.Record{Fault: r.o.Fault.String()}
	if fr != nil {
		rec = fr.Stop()
	} else {
		rec.Events = []fault.Event{{At: time.Now().UTC(), What: "not applied: the load's workers never ran"}}
	}
	r.mu.Lock()
	r.manifest.Options["fault_record"] = rec
	r.mu.Unlock()
	for _, e := range rec.Errors {
		r.invalid("fault " + rec.Fault + ": " + e)
	}
}

// resizeWait bounds the wait for the kubelet to apply a resize.
const resizeWait = 30 * time.Second

// LimitPod caps part p's container at millicores of CPU by an in-place
// resize (the pod's resize subresource: no restart), returning once the
// kubelet reports the new limit applied, and an undo that resizes it back
// to what it was. A container without a CPU limit is refused: Kubernetes
// cannot remove a limit once set, so the fault could not be undone.
func (t faultTarget) LimitPod(ctx context.Context, p mesh.Part, millicores int) (string, func(context.Context) error, error) {
	return t.r.c.LimitPart(ctx, t.r.o.Spec, p, millicores)
}

// LimitPart is LimitPod for the cell of spec s.
func (c *Cluster) LimitPart(ctx context.Context, s Spec, p mesh.Part, millicores int) (what string, undo func(context.Context) error, err error) {
	pp, err := c.partPods(ctx, s, p)
	if err != nil {
		return "", nil, err
	}
	name := pp.container
	orig, ok := containerResources(&pp.pod, name)
	if !ok {
		return "", nil, fmt.Errorf("pod %s/%s has no container %s (the %s)", pp.ns, pp.pod.Name, name, p)
	}
	if _, ok := orig.Limits[corev1.ResourceCPU]; !ok {
		// Kubernetes refuses to remove a limit once set ("resource limits
		// cannot be removed", 1.36): the fault could not be undone.
		return "", nil, fmt.Errorf("pod %s/%s container %s (the %s) has no CPU limit, and a resize cannot remove one once set: the limit could not be undone, so it is not applied (give the container a CPU limit to resize)", pp.ns, pp.pod.Name, name, p)
	}
	lim := *resource.NewMilliQuantity(int64(millicores), resource.DecimalSI)
	want := *orig.DeepCopy()
	if want.Limits == nil {
		want.Limits = corev1.ResourceList{}
	}
	want.Limits[corev1.ResourceCPU] = lim
	if req, ok := want.Requests[corev1.ResourceCPU]; ok && (req.Cmp(lim) > 0 || sameQuantity(orig.Limits, orig.Requests, corev1.ResourceCPU)) {
		// A request above the limit is refused, and a request equal to
		// the limit must stay so (the pod's QoS class cannot change).
		want.Requests[corev1.ResourceCPU] = lim
	}
	start := time.Now()
	undo = func(ctx context.Context) error {
		_, err := c.resize(ctx, pp.ns, pp.pod.Name, name, orig)
		return err
	}
	if sent, err := c.resize(ctx, pp.ns, pp.pod.Name, name, want); err != nil {
		if !sent {
			undo = nil
		}
		// Sent but not seen applied (an interrupt, a slow kubelet): the
		// undo still puts it back.
		return "", undo, err
	}
	was := orig.Limits[corev1.ResourceCPU]
	what = fmt.Sprintf("pod %s/%s container %s: CPU limit %s (was %s), applied by the kubelet %.3fs after the resize", pp.ns, pp.pod.Name, name, lim.String(), was.String(), time.Since(start).Seconds())
	return what, undo, nil
}

// containerResources are the resources of pod's container name (a
// sidecar may be a restartable init container).
func containerResources(pod *corev1.Pod, name string) (corev1.ResourceRequirements, bool) {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, ct := range cs {
			if ct.Name == name {
				return ct.Resources, true
			}
		}
	}
	return corev1.ResourceRequirements{}, false
}

func sameQuantity(a, b corev1.ResourceList, r corev1.ResourceName) bool {
	x, okA := a[r]
	y, okB := b[r]
	return okA && okB && x.Cmp(y) == 0
}

// resize sets container name's resources of pod ns/pod to want through
// the resize subresource and waits until the kubelet reports its CPU
// limit applied (the container's status resources), at most resizeWait;
// a resize the node cannot do (PodResizePending, Infeasible) fails. sent
// says the API server took the resize (even when the wait then failed).
func (c *Cluster) resize(ctx context.Context, ns, pod, name string, want corev1.ResourceRequirements) (sent bool, err error) {
	// The kubelet updates the pod's status meanwhile: a conflict is read
	// again and retried.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Core.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cs := range [][]corev1.Container{cur.Spec.Containers, cur.Spec.InitContainers} {
			for i := range cs {
				if cs[i].Name == name {
					cs[i].Resources = want
				}
			}
		}
		_, err = c.Core.CoreV1().Pods(ns).UpdateResize(ctx, pod, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("resizing %s/%s container %s: %w", ns, pod, name, err)
	}
	wctx, cancel := context.WithTimeout(ctx, resizeWait)
	defer cancel()
	var last string
	err = wait.PollUntilContextCancel(wctx, faultPollEvery, true, func(ctx context.Context) (bool, error) {
		p, err := c.Core.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cd := range p.Status.Conditions {
			if cd.Type == corev1.PodResizePending && cd.Status == corev1.ConditionTrue {
				last = cd.Reason + ": " + cd.Message
				if cd.Reason == corev1.PodReasonInfeasible {
					return false, fmt.Errorf("the node cannot resize it: %s", last)
				}
			}
		}
		for _, st := range append(p.Status.ContainerStatuses, p.Status.InitContainerStatuses...) {
			if st.Name == name && st.Resources != nil {
				got, okGot := st.Resources.Limits[corev1.ResourceCPU]
				w, okWant := want.Limits[corev1.ResourceCPU]
				return okGot == okWant && (!okWant || got.Cmp(w) == 0), nil
			}
		}
		return false, nil
	})
	if err != nil {
		if last != "" {
			err = fmt.Errorf("%w (%s)", err, last)
		}
		return true, fmt.Errorf("resizing %s/%s container %s: waiting for the kubelet: %w", ns, pod, name, err)
	}
	return true, nil
}
