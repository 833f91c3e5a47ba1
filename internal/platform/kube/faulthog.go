package kube

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
	"github.com/meshbench/meshbench/internal/workload"
)

// The noisy-neighbour fault on a cluster: a pod of its own, pinned to the
// server's node (the node of the entry service's first Ready replica,
// the pod the other faults hit) by its nodeName, with requests = limits
// = the fault's millicores of CPU, running `meshbench hog` from
// meshbench's image (already on that node: the app runs it) busy on all
// of it. It is made in the app namespace (deleted with it, whatever
// happens), out of every mesh (the meshes' per-pod opt-outs: it is no
// part of the app, and a sidecar would add its own CPU), classified as
// overhead by its label (metricsapi.LabelFault: the node's CPU holds it,
// the app's does not), and deleted at the fault's end, the cell's, on
// failure and on Ctrl-C. Its own bound (--for, activeDeadlineSeconds)
// is the fault's end plus hogMargin, so a hog a killed meshbench left
// stops by itself.

var _ fault.PodHogger = faultTarget{}

const (
	hogContainer = "hog"
	// hogMemory is the hog pod's memory request and limit (it allocates
	// nothing): equal, with the CPU's, so the pod is Guaranteed.
	hogMemory = "32Mi"
	// hogMargin is how much longer than the fault the hog may run by
	// itself: its delete, not its bound, is what ends it.
	hogMargin = 30 * time.Second
	// hogGrace is the hog's termination grace period: it stops at SIGTERM
	// and writes its account at once.
	hogGrace = 2
)

// hogOptOut are the per-pod opt-outs of the meshes meshbench deploys:
// Istio's sidecar injection, Istio's ambient capture, Linkerd's injection.
var (
	hogOptOutLabels      = map[string]string{"sidecar.istio.io/inject": "false", "istio.io/dataplane-mode": "none"}
	hogOptOutAnnotations = map[string]string{"linkerd.io/inject": "disabled"}
)

// HogPod starts the noisy neighbour of the cell's fault: millicores of
// CPU on the server's node, for the fault's length.
func (t faultTarget) HogPod(ctx context.Context, millicores int) (string, func(context.Context) (string, error), error) {
	o := t.r.o
	length := o.Fault.For
	if length <= 0 {
		length = o.Duration - o.Fault.At
	}
	return t.r.c.HogPod(ctx, o.Spec, millicores, length+hogMargin)
}

// hogPod is the hog's pod on node, bounded to bound, with tolerations
// (the server pod's: it must be admitted where the server was).
func (s Spec) hogPod(node string, millicores int, bound time.Duration, tolerations []corev1.Toleration) *corev1.Pod {
	cpu := *resource.NewMilliQuantity(int64(millicores), resource.DecimalSI)
	res := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: resource.MustParse(hogMemory)}
	l := s.labels()
	l[metricsapi.LabelFault] = string(fault.NoisyNeighbour)
	maps.Copy(l, hogOptOutLabels)
	ann := maps.Clone(hogOptOutAnnotations)
	deadline := int64(bound/time.Second) + 1
	grace := int64(hogGrace)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "noisy-neighbour-", Namespace: s.AppNamespace, Labels: l,
			Annotations: ann},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  new(false),
			Tolerations:                   tolerations,
			Containers: []corev1.Container{{
				Name: hogContainer, Image: s.Image,
				Args: []string{"hog", "--millicores", strconv.Itoa(millicores), "--for", bound.String(),
					"--report", corev1.TerminationMessagePathDefault},
				Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
				SecurityContext: restricted(),
			}},
		},
	}
}

// HogPod is faultTarget.HogPod for the cell of spec s: the hog pod made
// on the served pod's node and waited for until its container runs.
// undo deletes it and waits until it is gone, saying what the hog did
// by its own account (its termination message) when it was seen.
func (c *Cluster) HogPod(ctx context.Context, s Spec, millicores int, bound time.Duration) (what string, undo func(context.Context) (string, error), err error) {
	s = s.WithDefaults()
	served, _, err := c.servedPod(ctx, s)
	if err != nil {
		return "", nil, err
	}
	node := served.Spec.NodeName
	pods := c.Core.CoreV1().Pods(s.AppNamespace)
	start := time.Now()
	made, err := pods.Create(ctx, s.hogPod(node, millicores, bound, served.Spec.Tolerations), metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return "", nil, fmt.Errorf("creating the hog pod on node %s: %w", node, err)
	}
	name := s.AppNamespace + "/" + made.Name
	undo = func(ctx context.Context) (string, error) { return c.deleteHog(ctx, s.AppNamespace, made.Name) }
	err = wait.PollUntilContextCancel(ctx, faultPollEvery, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, made.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("it ended before it ran: %s %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		return containerStarted(p, hogContainer), nil
	})
	if err != nil {
		return "", undo, fmt.Errorf("hog pod %s on node %s: %w", name, node, err)
	}
	what = fmt.Sprintf("hog pod %s on node %s (the server's: pod %s), CPU %dm (requests = limits), %d busy thread(s), running %.3fs after its create",
		name, node, served.Name, millicores, workload.HogThreads(millicores), time.Since(start).Seconds())
	return what, undo, nil
}

// hogAccount is the hog's own account of what it did (its termination
// message), "" until its container has ended with one.
func hogAccount(p *corev1.Pod) string {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == hogContainer && st.State.Terminated != nil {
			return strings.TrimSpace(st.State.Terminated.Message)
		}
	}
	return ""
}

// deleteHog deletes hog pod ns/name and waits until it is gone, watching
// it meanwhile for its container's end and the hog's account.
func (c *Cluster) deleteHog(ctx context.Context, ns, name string) (string, error) {
	pods := c.Core.CoreV1().Pods(ns)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("hog pod %s/%s already gone", ns, name), nil
	}
	if err != nil {
		return "", fmt.Errorf("hog pod %s/%s: %w", ns, name, err)
	}
	account := hogAccount(p)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: p.ResourceVersion})
	if err != nil {
		return "", fmt.Errorf("watching hog pod %s/%s: %w", ns, name, err)
	}
	defer w.Stop()
	start := time.Now()
	grace := int64(hogGrace)
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("deleting hog pod %s/%s: %w", ns, name, err)
	}
	gone := false
	for !gone {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				gone = true // the watch ended: asked below
				break
			}
			if q, ok := ev.Object.(*corev1.Pod); ok {
				account = cmp.Or(hogAccount(q), account)
			}
			gone = ev.Type == watch.Deleted
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for hog pod %s/%s to go: %w", ns, name, ctx.Err())
		}
	}
	err = wait.PollUntilContextCancel(ctx, faultPollEvery, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for hog pod %s/%s to go: %w", ns, name, err)
	}
	said := fmt.Sprintf("hog pod %s/%s deleted, gone %.3fs later", ns, name, time.Since(start).Seconds())
	if account != "" {
		return said + "; by its own account: " + strings.TrimPrefix(account, "hog: "), nil
	}
	return said + "; its own account was not seen", nil
}
