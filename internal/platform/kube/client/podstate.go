package client

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons a container waits that no amount of waiting fixes: the image
// cannot be had, or the container keeps crashing.
var (
	imageReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true}
	stuckReasons = map[string]bool{"CrashLoopBackOff": true, "CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true}
)

// PodProblem is a pod that cannot become ready: an image that cannot be
// pulled, or a container that keeps crashing. Its Error is one line that
// says what to do.
type PodProblem struct {
	Namespace, Pod, Container, Image string
	Reason, Message                  string
	ExitCode, Restarts               int32
}

func (p *PodProblem) Error() string {
	where := fmt.Sprintf("pod %s/%s container %s", p.Namespace, p.Pod, p.Container)
	msg := strings.TrimSpace(p.Message)
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if imageReasons[p.Reason] {
		return fmt.Sprintf("%s: image %s cannot be pulled (%s: %s); build it and load it into the cluster's nodes: "+
			"meshbench image --tag %s --load k3d:CLUSTER (or kind:CLUSTER, containerd:SOCKET), "+
			"or push it where the nodes pull from: meshbench image --push %s",
			where, p.Image, p.Reason, msg, p.Image, p.Image)
	}
	if p.Reason == "CrashLoopBackOff" {
		return fmt.Sprintf("%s (image %s) is crash-looping: exit code %d, %d restarts; see kubectl logs -n %s %s -c %s --previous",
			where, p.Image, p.ExitCode, p.Restarts, p.Namespace, p.Pod, p.Container)
	}
	return fmt.Sprintf("%s (image %s) cannot start: %s: %s", where, p.Image, p.Reason, msg)
}

// NodeProblem is a node that stopped reporting (NotReady: its kubelet is
// gone or cut off) while a pod of the run is on it.
type NodeProblem struct {
	Node, Namespace, Pod string
	Reason, Message      string
}

func (p *NodeProblem) Error() string {
	return fmt.Sprintf("node %s is not Ready (%s: %s) with pod %s/%s on it", p.Node, p.Reason, strings.TrimSpace(p.Message), p.Namespace, p.Pod)
}

// PodProblem returns the first pod in ns (matching selector) that cannot
// become ready or whose node is not Ready, nil when none is stuck (still
// starting is not stuck).
func (c *Client) PodProblem(ctx context.Context, ns, selector string) (problem, err error) {
	pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if p := stuckPod(&pods.Items[i]); p != nil {
			return p, nil
		}
	}
	var nodes map[string]*corev1.Node
	for _, pod := range pods.Items {
		if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if nodes == nil {
			list, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			nodes = map[string]*corev1.Node{}
			for i := range list.Items {
				nodes[list.Items[i].Name] = &list.Items[i]
			}
		}
		n := nodes[pod.Spec.NodeName]
		if n == nil {
			return &NodeProblem{Node: pod.Spec.NodeName, Namespace: pod.Namespace, Pod: pod.Name, Reason: "NotFound", Message: "the node was deleted"}, nil
		}
		if !NodeReady(n) {
			np := &NodeProblem{Node: n.Name, Namespace: pod.Namespace, Pod: pod.Name, Reason: "NotReady"}
			for _, cnd := range n.Status.Conditions {
				if cnd.Type == corev1.NodeReady {
					np.Reason, np.Message = cnd.Reason, cnd.Message
				}
			}
			return np, nil
		}
	}
	return nil, nil
}

// stuckPod checks one pod's init and app containers.
func stuckPod(pod *corev1.Pod) *PodProblem {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	specImage := map[string]string{}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		specImage[c.Name] = c.Image
	}
	for _, st := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		w := st.State.Waiting
		if w == nil || (!imageReasons[w.Reason] && !stuckReasons[w.Reason]) {
			continue
		}
		p := &PodProblem{Namespace: pod.Namespace, Pod: pod.Name, Container: st.Name,
			Image: specImage[st.Name], Reason: w.Reason, Message: w.Message, Restarts: st.RestartCount}
		if p.Image == "" {
			p.Image = st.Image
		}
		if t := st.LastTerminationState.Terminated; t != nil {
			p.ExitCode = t.ExitCode
		}
		return p
	}
	return nil
}

// NodeReady reports whether n's Ready condition is True (false when it has
// none). It says nothing about whether pods may be scheduled on n.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
