package loadjob

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/platform/kube/client"
)

// Wait waits until the Job completes (every worker succeeded) or fails.
// Pods of appNS (when not "") that stop being able to run fail it too.
func Wait(ctx context.Context, c *client.Client, ns, name, appNS string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		j, err := c.Core.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case batchv1.JobComplete:
				return nil
			case batchv1.JobFailed:
				return fmt.Errorf("load Job %s/%s failed: %s: %s%s", ns, name, cond.Reason, cond.Message, failedWorkers(ctx, c.Core, ns, name))
			}
		}
		if p, err := c.PodProblem(ctx, ns, "job-name="+name); err != nil {
			return err
		} else if p != nil {
			return fmt.Errorf("load Job %s/%s cannot run: %w", ns, name, p)
		}
		// The app's pods too: a node of theirs that stops reporting
		// makes the measurement meaningless.
		if appNS != "" {
			if p, err := c.PodProblem(ctx, appNS, ""); err != nil {
				return err
			} else if p != nil {
				return fmt.Errorf("app broke while the load Job %s/%s ran: %w", ns, name, p)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("load Job %s/%s not finished after %v (%d active, %d succeeded, %d failed)",
				ns, name, timeout, j.Status.Active, j.Status.Succeeded, j.Status.Failed)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// failedWorkers describes the failed pods of load Job name ("" when none
// is found): which worker, and how its container ended (exit code 137 is
// SIGKILL: the OOM killer, or someone).
func failedWorkers(ctx context.Context, core kubernetes.Interface, ns, name string) string {
	pods, err := core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil {
		return ""
	}
	var parts []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodFailed {
			continue
		}
		desc := "pod " + p.Name
		for _, st := range p.Status.ContainerStatuses {
			if t := st.State.Terminated; t != nil {
				desc += fmt.Sprintf(" (container %s: exit code %d, %s)", st.Name, t.ExitCode, t.Reason)
			}
		}
		parts = append(parts, desc)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; failed: " + strings.Join(parts, ", ")
}
