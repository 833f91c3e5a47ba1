package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshbench/meshbench/internal/mesh"
)

// ztunnel's worker threads on a cluster belong to its one DaemonSet: the
// env ZTUNNEL_WORKER_THREADS of its container, which the ztunnel chart
// sets from values.ztunnel.env (what `kubectl set env` changes on a mesh
// installed already). A cell that sets proxy_threads changes it and rolls
// every node's ztunnel out before the app is deployed; the value the
// DaemonSet had before is kept in an annotation on it
// (ZtunnelThreadsBefore), so the plan's end (RestoreZtunnelThreads), a
// later cell without proxy_threads, or a later run after an interrupted
// one puts it back.
const (
	// ZtunnelThreadsEnv is ztunnel's worker threads setting.
	ZtunnelThreadsEnv = "ZTUNNEL_WORKER_THREADS"
	// ZtunnelThreadsBefore annotates the ztunnel DaemonSet with its
	// ZTUNNEL_WORKER_THREADS before meshbench changed it (ztunnelUnset
	// when it had none).
	ZtunnelThreadsBefore = "meshbench.io/ztunnel-worker-threads-before"
	ztunnelUnset         = "unset"
	ztunnelDaemonSet     = "ztunnel"
)

// ZtunnelThreadsChange is what SetZtunnelThreads did (the manifest's
// options keep it as ztunnel_threads_change).
type ZtunnelThreadsChange struct {
	// From and To are ZTUNNEL_WORKER_THREADS before and after ("": unset).
	From string `json:"from"`
	To   string `json:"to"`
	// Seconds is how long the rollout took, until every node's ztunnel
	// ran the new setting and was Ready.
	Seconds float64 `json:"rollout_seconds"`
}

// ztunnelContainer is the ztunnel DaemonSet's container's name.
func ztunnelContainer() string {
	m, _ := mesh.Get("ambient")
	if p, ok := m.Parts[mesh.PartNodeProxy]; ok {
		return p.Container
	}
	return "istio-proxy"
}

// envValue is container name's env value of key in pod spec ps, and
// whether it is set.
func envValue(ps *corev1.PodSpec, name, key string) (string, bool) {
	for _, ct := range ps.Containers {
		if ct.Name != name {
			continue
		}
		for _, e := range ct.Env {
			if e.Name == key {
				return e.Value, true
			}
		}
	}
	return "", false
}

// SetZtunnelThreads makes every node's ztunnel run n worker threads
// (n > 0), or puts back the setting meshbench changed (n == 0; nothing
// when it changed none), and waits at most timeout for the rollout: every
// scheduled ztunnel pod of the new template Ready, none of the old left.
// It returns nil when there was nothing to change.
func (c *Cluster) SetZtunnelThreads(ctx context.Context, n int, timeout time.Duration) (*ZtunnelThreadsChange, error) {
	ns := mesh.IstioNamespace
	dss := c.Core.AppsV1().DaemonSets(ns)
	ds, err := dss.Get(ctx, ztunnelDaemonSet, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("ztunnel's worker threads: reading DaemonSet %s/%s: %w", ns, ztunnelDaemonSet, err)
	}
	container := ztunnelContainer()
	cur, set := envValue(&ds.Spec.Template.Spec, container, ZtunnelThreadsEnv)
	if !set {
		cur = ""
	}
	before, saved := ds.Annotations[ZtunnelThreadsBefore]
	want := strconv.Itoa(n)
	var env, ann map[string]any
	switch {
	case n > 0 && set && cur == want:
		return nil, c.waitZtunnelRollout(ctx, ds, want, timeout) // a rollout left unfinished by a run cut short
	case n > 0:
		env = map[string]any{"name": ZtunnelThreadsEnv, "value": want}
		if !saved {
			ann = map[string]any{ZtunnelThreadsBefore: orUnset(cur)}
		}
	case !saved:
		return nil, nil // meshbench changed nothing
	default:
		// Back to the setting before, and the note gone.
		ann = map[string]any{ZtunnelThreadsBefore: nil}
		want = ""
		if before != ztunnelUnset {
			want = before
		}
		switch {
		case set == (want != "") && cur == want:
			// The setting is back already: only the note goes.
		case want == "":
			env = map[string]any{"name": ZtunnelThreadsEnv, "$patch": "delete"}
		default:
			env = map[string]any{"name": ZtunnelThreadsEnv, "value": want}
		}
	}
	patch := map[string]any{}
	if ann != nil {
		patch["metadata"] = map[string]any{"annotations": ann}
	}
	if env != nil {
		patch["spec"] = map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": container, "env": []any{env}}},
		}}}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ds, err = dss.Patch(ctx, ztunnelDaemonSet, types.StrategicMergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("ztunnel's worker threads: patching DaemonSet %s/%s: %w", ns, ztunnelDaemonSet, err)
	}
	if err := c.waitZtunnelRollout(ctx, ds, want, timeout); err != nil {
		return nil, err
	}
	return &ZtunnelThreadsChange{From: cur, To: want, Seconds: time.Since(start).Seconds()}, nil
}

// String says the change in a line.
func (ch *ZtunnelThreadsChange) String() string {
	return fmt.Sprintf("%s %s → %s, every node's ztunnel rolled out and Ready in %.1fs", ZtunnelThreadsEnv, orUnset(ch.From), orUnset(ch.To), ch.Seconds)
}

func orUnset(v string) string {
	if v == "" {
		return ztunnelUnset
	}
	return v
}

// RestoreZtunnelThreads puts back ztunnel's worker threads as they were
// before meshbench changed them (SetZtunnelThreads with 0): for the end
// of a plan. A cluster without ztunnel has nothing to restore.
func (c *Cluster) RestoreZtunnelThreads(ctx context.Context, timeout time.Duration) (*ZtunnelThreadsChange, error) {
	_, err := c.Core.AppsV1().DaemonSets(mesh.IstioNamespace).Get(ctx, ztunnelDaemonSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c.SetZtunnelThreads(ctx, 0, timeout)
}

// waitZtunnelRollout waits until the DaemonSet's controller saw ds's
// template and every scheduled ztunnel pod runs it (its env says want,
// "" for unset) and is Ready, with no pod of an older template left.
func (c *Cluster) waitZtunnelRollout(ctx context.Context, ds *appsv1.DaemonSet, want string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	container := ztunnelContainer()
	sel := metav1.FormatLabelSelector(ds.Spec.Selector)
	var why string
	for {
		cur, err := c.Core.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err == nil {
			why = rolloutPending(cur)
		}
		if err == nil && why == "" {
			var pods *corev1.PodList
			pods, err = c.Core.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err == nil {
				why = ztunnelPodsPending(pods.Items, container, want, int(cur.Status.DesiredNumberScheduled))
			}
		}
		if err == nil && why == "" {
			return nil
		}
		if err != nil {
			why = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ztunnel's worker threads %q: the rollout of %s/%s did not finish in %s: %s", want, ds.Namespace, ds.Name, timeout, why)
		case <-time.After(time.Second):
		}
	}
}

// rolloutPending says why ds's rollout is not done ("" when it is), as
// `kubectl rollout status` judges a DaemonSet.
func rolloutPending(ds *appsv1.DaemonSet) string {
	s := ds.Status
	switch {
	case s.ObservedGeneration < ds.Generation:
		return "the controller has not seen the new template yet"
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return fmt.Sprintf("%d of %d pods updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
	case s.NumberAvailable < s.DesiredNumberScheduled:
		return fmt.Sprintf("%d of %d updated pods available", s.NumberAvailable, s.DesiredNumberScheduled)
	}
	return ""
}

// ztunnelPodsPending says why pods are not yet desired pods of the new
// setting, all Ready ("" when they are).
func ztunnelPodsPending(pods []corev1.Pod, container, want string, desired int) string {
	ready := 0
	for i := range pods {
		p := &pods[i]
		v, _ := envValue(&p.Spec, container, ZtunnelThreadsEnv)
		switch {
		case p.DeletionTimestamp != nil:
			return "pod " + p.Name + " is terminating"
		case v != want:
			return fmt.Sprintf("pod %s still has %s=%q", p.Name, ZtunnelThreadsEnv, v)
		case PodReady(p):
			ready++
		}
	}
	if ready < desired {
		return fmt.Sprintf("%d of %d pods Ready", ready, desired)
	}
	return ""
}

// ztunnelConfigThreads is ztunnel's worker threads in the config it logs
// at start.
var ztunnelConfigThreads = regexp.MustCompile(`numWorkerThreads"?:\s*(\d+)`)

// ZtunnelLogThreads reads ztunnel's worker threads from its log: the
// config it prints at start (numWorkerThreads).
func ZtunnelLogThreads(log []byte) (int, error) {
	m := ztunnelConfigThreads.FindSubmatch(log)
	if m == nil {
		return 0, fmt.Errorf("its log prints no config with numWorkerThreads")
	}
	return strconv.Atoi(string(m[1]))
}

// verifyZtunnelThreads checks, from each running ztunnel's own log (the
// config it started with), that it runs n worker threads.
func (c *Cluster) verifyZtunnelThreads(ctx context.Context, n int, seen map[string]int) ([]Check, error) {
	pods, err := c.Core.CoreV1().Pods(mesh.IstioNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=ztunnel"})
	if err != nil {
		return nil, err
	}
	container := ztunnelContainer()
	limit := int64(4 << 20)
	var checks []Check
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		chk := Check{What: fmt.Sprintf("ztunnel %s (node %s) runs %d worker thread(s) (its log's config, numWorkerThreads)", p.Name, p.Spec.NodeName, n)}
		raw, err := c.Core.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, LimitBytes: &limit}).DoRaw(ctx)
		var got int
		if err == nil {
			got, err = ZtunnelLogThreads(raw)
		}
		if err != nil {
			chk.Detail = err.Error()
		} else {
			seen[p.Namespace+"/"+p.Name] = got
			chk.OK = got == n
			chk.Detail = fmt.Sprintf("%d worker thread(s)", got)
		}
		checks = append(checks, chk)
	}
	if len(checks) == 0 {
		checks = append(checks, Check{What: "ztunnel pods to read", Detail: "none running"})
	}
	return checks, nil
}

// verifyWaypointThreads checks, from each running waypoint pod's own
// Envoy (server.concurrency), that it runs n worker threads.
func (c *Cluster) verifyWaypointThreads(ctx context.Context, ns string, n int, seen map[string]int) ([]Check, error) {
	pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var checks []Check
	for i := range pods.Items {
		p := &pods.Items[i]
		if !isWaypointPod(p) || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		chk := Check{What: fmt.Sprintf("waypoint %s runs %d worker thread(s) (Envoy's server.concurrency)", p.Name, n)}
		got, err := c.envoyConcurrency(ctx, p)
		if err != nil {
			chk.Detail = err.Error()
		} else {
			seen[p.Namespace+"/"+p.Name] = got
			chk.OK = got == n
			chk.Detail = fmt.Sprintf("%d worker thread(s)", got)
		}
		checks = append(checks, chk)
	}
	if len(checks) == 0 {
		checks = append(checks, Check{What: "waypoint pods in " + ns + " to read", Detail: "none running"})
	}
	return checks, nil
}

// setZtunnelThreads makes every node's ztunnel run the cell's worker
// threads before its app is deployed (ambient and waypoint), or puts
// back what meshbench changed when the cell sets none; a change is
// recorded in the manifest's options (ztunnel_threads_change, with the
// rollout's seconds, which the cell pays before its app is deployed,
// outside its measured window).
func (r *run) setZtunnelThreads(ctx context.Context) error {
	if !isAmbient(string(r.o.Spec.Mesh.Mode)) {
		return nil
	}
	n := r.o.Spec.Mesh.ProxyThreads
	if n > 0 && !r.o.AllowForeign {
		if err := r.c.refuseZtunnelRestart(ctx, n, r.o.Spec.AppNamespace, r.o.Spec.LoadNamespace); err != nil {
			return err
		}
	}
	ch, err := r.c.SetZtunnelThreads(ctx, n, r.o.ReadyTimeout)
	if err != nil || ch == nil {
		return err
	}
	r.mu.Lock()
	r.manifest.Options["ztunnel_threads_change"] = ch
	r.mu.Unlock()
	r.logf("ztunnel's worker threads: %s", ch)
	return nil
}

// refuseZtunnelRestart returns an error when setting ztunnel's worker
// threads to n would restart every node's ztunnel under ambient workloads
// meshbench did not create: pods in namespaces (or pods) enrolled with
// istio.io/dataplane-mode=ambient other than the run's own (ours). Nil
// when ztunnel already runs n, or nothing else is enrolled.
func (c *Cluster) refuseZtunnelRestart(ctx context.Context, n int, ours ...string) error {
	ds, err := c.Core.AppsV1().DaemonSets(mesh.IstioNamespace).Get(ctx, ztunnelDaemonSet, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("ztunnel's worker threads: reading DaemonSet %s/%s: %w", mesh.IstioNamespace, ztunnelDaemonSet, err)
	}
	if cur, set := envValue(&ds.Spec.Template.Spec, ztunnelContainer(), ZtunnelThreadsEnv); set && cur == strconv.Itoa(n) {
		return nil
	}
	others, err := c.ambientWorkloads(ctx, ours)
	if err != nil || len(others) == 0 {
		return err
	}
	return fmt.Errorf("proxy threads %d: setting ztunnel's worker threads restarts every node's ztunnel, which carries ambient workloads meshbench did not create (%s); "+
		"run with --allow-foreign-workloads to restart them anyway", n, strings.Join(others, ", "))
}

// ambientWorkloads are the namespaces with pods enrolled in ambient
// (the namespace or the pod labelled istio.io/dataplane-mode=ambient),
// as "NAMESPACE (N pods)", leaving out the namespaces in skip.
func (c *Cluster) ambientWorkloads(ctx context.Context, skip []string) ([]string, error) {
	nss, err := c.Core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	var out []string
	for _, ns := range nss.Items {
		if slices.Contains(skip, ns.Name) {
			continue
		}
		pods, err := c.Core.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing pods in %s: %w", ns.Name, err)
		}
		enrolled := 0
		for _, p := range pods.Items {
			mode := ns.Labels[ambientModeLabel]
			if v, ok := p.Labels[ambientModeLabel]; ok {
				mode = v
			}
			if mode == "ambient" && p.DeletionTimestamp == nil {
				enrolled++
			}
		}
		if enrolled > 0 {
			out = append(out, fmt.Sprintf("%s (%d pods)", ns.Name, enrolled))
		}
	}
	return out, nil
}

// ambientModeLabel enrols a namespace or a pod in Istio's ambient mode.
const ambientModeLabel = "istio.io/dataplane-mode"

// verifyAmbientThreads checks that ztunnel (every node's) and, in
// waypoint mode, the app namespace's waypoint run n worker threads, each
// by its own report.
func (c *Cluster) verifyAmbientThreads(ctx context.Context, mode, ns string, n int) ([]Check, map[string]int, error) {
	seen := map[string]int{}
	checks, err := c.verifyZtunnelThreads(ctx, n, seen)
	if err != nil {
		return nil, nil, err
	}
	if mesh.Is(mode, mesh.KindWaypoint) {
		wc, err := c.verifyWaypointThreads(ctx, ns, n, seen)
		if err != nil {
			return nil, nil, err
		}
		checks = append(checks, wc...)
	}
	return checks, seen, failed(checks)
}
