package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// StandInWorkers returns a hook for kube.Options.BeforeCollect: kwok runs
// no container, so once a load Job's pods have completed it runs each
// worker on this machine instead, as a real `meshbench load` process (bin)
// with the Job's own arguments, the worker index taken from the pod's
// completion index and the target URL replaced with target (a server on
// loopback), and has kwok serve each worker's output as its pod's log of
// container. onArgs, when set, sees every worker's arguments.
//
// This is the one stand-in of the cluster tests; everything else (the
// Job, its pods, the logs read through the API) is real.
func (c *Cluster) StandInWorkers(bin, target, container string, onArgs func([]string)) func(context.Context, *batchv1.Job, []corev1.Pod) error {
	var mu sync.Mutex
	return func(ctx context.Context, job *batchv1.Job, pods []corev1.Pod) error {
		if len(job.Spec.Template.Spec.Containers) == 0 {
			return fmt.Errorf("load Job %s has no container", job.Name)
		}
		var wg sync.WaitGroup
		outs := make([][]byte, len(pods))
		errs := make([]error, len(pods))
		for i, p := range pods {
			args := append([]string(nil), job.Spec.Template.Spec.Containers[0].Args...)
			for j, a := range args {
				switch {
				case strings.Contains(a, "JOB_COMPLETION_INDEX"):
					args[j] = p.Annotations[batchv1.JobCompletionIndexAnnotation]
				case strings.HasPrefix(a, "http://"):
					args[j] = target
				}
			}
			if onArgs != nil {
				mu.Lock()
				onArgs(args)
				mu.Unlock()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.CommandContext(ctx, bin, args...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				outs[i], errs[i] = cmd.Output()
				if errs[i] != nil {
					errs[i] = fmt.Errorf("worker %v: %v: %s", args, errs[i], stderr.String())
				}
			}()
		}
		wg.Wait()
		for i, p := range pods {
			if errs[i] != nil {
				return errs[i]
			}
			if err := c.ServePodLogs(ctx, p.Namespace, p.Name, container, string(outs[i])); err != nil {
				return err
			}
		}
		return nil
	}
}
