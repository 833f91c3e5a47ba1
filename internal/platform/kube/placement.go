package kube

import (
	"context"
	"fmt"
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
	return nil
}
