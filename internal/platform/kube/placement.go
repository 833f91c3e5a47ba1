package kube

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// PodNodes is where a cell's pods ran: the nodes of its app pods and of
// its load workers, each sorted and without repeats, and every pod's
// node by "namespace/pod".
type PodNodes struct {
	App  []string          `json:"app"`
	Load []string          `json:"load"`
	Pods map[string]string `json:"pods"`
	// Threads are the worker threads the mesh's injector gave each pod's
	// proxy by "namespace/pod" (InjectedThreads), where it gave any.
	Threads map[string]int `json:"injected_threads,omitempty"`
}

// podNodes reads the nodes the pods of the app and load namespaces ran
// on (the load's pods stay until the namespace goes: the Job has no TTL).
func (c *Cluster) podNodes(ctx context.Context, s Spec) (PodNodes, error) {
	pn := PodNodes{Pods: map[string]string{}}
	for _, ns := range []string{s.AppNamespace, s.LoadNamespace} {
		pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + s.RunID})
		if err != nil {
			return pn, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			pn.Pods[ns+"/"+p.Name] = p.Spec.NodeName
			if n := InjectedThreads(&p); n > 0 {
				if pn.Threads == nil {
					pn.Threads = map[string]int{}
				}
				pn.Threads[ns+"/"+p.Name] = n
			}
			switch p.Labels[LabelRole] {
			case RoleApp:
				pn.App = append(pn.App, p.Spec.NodeName)
			case RoleLoad:
				pn.Load = append(pn.Load, p.Spec.NodeName)
			}
		}
	}
	sort.Strings(pn.App)
	sort.Strings(pn.Load)
	pn.App, pn.Load = slices.Compact(pn.App), slices.Compact(pn.Load)
	return pn, nil
}

// PlacementProblem says how pn contradicts placement p ("" or
// cross-node: no load worker on a node with an app pod; same-node: every
// load worker on one), "" when it does not. The default placement ("")
// asks nothing on a cluster of one node.
func PlacementProblem(p topology.Placement, pn PodNodes, nodeCount int) string {
	if len(pn.App) == 0 || len(pn.Load) == 0 {
		return fmt.Sprintf("no node recorded for the app (%d) or the load (%d)", len(pn.App), len(pn.Load))
	}
	var shared, apart []string
	for _, n := range pn.Load {
		if slices.Contains(pn.App, n) {
			shared = append(shared, n)
		} else {
			apart = append(apart, n)
		}
	}
	switch {
	case p == topology.PlacementSameNode && len(apart) > 0:
		return "placement same-node, but load workers ran on " + strings.Join(apart, ", ") + ", which has no app pod (app on " + strings.Join(pn.App, ", ") + ")"
	case p == topology.PlacementCrossNode && len(shared) > 0, p == "" && nodeCount >= AntiAffinityMinNodes && len(shared) > 0:
		return "placement cross-node, but load workers ran on " + strings.Join(shared, ", ") + " beside app pods"
	}
	return ""
}

// checkPlacement records the nodes the cell's pods ran on (the manifest's
// options, pod_nodes) and marks the cell invalid when they contradict its
// placement.
func (r *run) checkPlacement(ctx context.Context) error {
	pn, err := r.c.podNodes(context.WithoutCancel(ctx), r.o.Spec)
	if err != nil {
		r.invalid("the pods' nodes not read: " + err.Error())
		return nil
	}
	r.mu.Lock()
	r.manifest.Options["pod_nodes"] = pn
	r.mu.Unlock()
	r.logf("nodes: app on %s, load on %s", strings.Join(pn.App, ", "), strings.Join(pn.Load, ", "))
	if why := PlacementProblem(r.o.Spec.Mesh.Placement, pn, r.o.Spec.NodeCount); why != "" {
		r.invalid(why)
	}
	// The load workers' proxies are gone by now: their threads as the
	// injector set them (the app's proxies reported theirs themselves,
	// checkThreads).
	if n := r.o.Spec.Mesh.ProxyThreads; n > 0 && r.o.Spec.desc().Cluster.ThreadsAnnotation != "" {
		for pod, node := range pn.Pods {
			if !strings.HasPrefix(pod, r.o.Spec.LoadNamespace+"/") {
				continue
			}
			if got := pn.Threads[pod]; got != n {
				r.invalid(fmt.Sprintf("proxy_threads %d: the load pod %s (on %s) got a proxy of %d worker thread(s) from the injector", n, pod, node, got))
			}
		}
	}
	return nil
}

// checkThreads checks that the app pods' proxies run the cell's worker
// threads (VerifyProxyThreads; ztunnel's and the waypoint's for ambient
// and waypoint, verifyAmbientThreads), keeping the checks
// (k8s/proxy-threads-checks.json) and what each proxy reported (the
// manifest's options, proxy_threads_seen); a proxy that runs another
// count makes the cell invalid.
func (r *run) checkThreads(ctx context.Context) error {
	n := r.o.Spec.Mesh.ProxyThreads
	mode := string(r.o.Spec.Mesh.Mode)
	checks, seen, err := r.c.VerifyProxyThreads(ctx, mode, r.o.Spec.AppNamespace, n)
	if n > 0 && isAmbient(mode) {
		checks, seen, err = r.c.verifyAmbientThreads(ctx, mode, r.o.Spec.AppNamespace, n)
	}
	if len(checks) == 0 {
		return nil
	}
	r.keepJSON(filepath.Join("k8s", "proxy-threads-checks.json"), checks)
	r.mu.Lock()
	r.manifest.Options["proxy_threads_seen"] = seen
	r.mu.Unlock()
	if err != nil {
		r.invalid(fmt.Sprintf("proxy_threads %d not in effect: %v", n, err))
	} else {
		r.logf("proxy threads verified from the proxies' own reports:")
		if r.o.Log != nil {
			logChecks(r.o.Log, checks)
		}
	}
	return nil
}
