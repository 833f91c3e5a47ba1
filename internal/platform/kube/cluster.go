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

	"github.com/meshbench/meshbench/internal/platform/kube/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConnectOptions choose the cluster (client.ConnectOptions).
type ConnectOptions = client.ConnectOptions

// FieldManager is the server-side apply field manager of everything
// meshbench applies.
const FieldManager = client.FieldManager

// Cluster is a connection to one cluster (client.Client: the clients,
// Apply) with meshbench's run operations on it.
type Cluster struct {
	*client.Client
}

// Connect reads the kubeconfig and checks that the API server answers
// (client.Connect).
func Connect(ctx context.Context, o ConnectOptions) (*Cluster, error) {
	cl, err := client.Connect(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Cluster{cl}, nil
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
