package kube

import (
	"bufio"
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/results"
)

// followLoadProgress follows the logs of the load Job's pods while they
// run (client-go's log stream, Follow) and calls on with the workers'
// running figures merged (results.MergeProgress) each time a worker
// prints a progress line (`meshbench load --progress-log`, every
// second). It looks for the Job's pods every second and starts following
// each once its container runs; a stream that fails (the container not
// started yet) is tried again. The returned stop ends every stream and
// waits for them; on is not called after it returns. A failure only
// costs the view its running figures: the run's result comes from the
// logs read whole at the end (collectWorkerLogs).
func (c *Cluster) followLoadProgress(ctx context.Context, ns, job string, on func(results.LoadProgress)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		following = map[string]bool{}
		latest    = map[string]results.LoadProgress{}
		stopped   bool
	)
	report := func(pod string, p results.LoadProgress) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		latest[pod] = p
		names := make([]string, 0, len(latest))
		for n := range latest {
			names = append(names, n)
		}
		sort.Strings(names)
		ps := make([]results.LoadProgress, len(names))
		for i, n := range names {
			ps[i] = latest[n]
		}
		on(results.MergeProgress(ps))
	}
	follow := func(pod string) {
		defer wg.Done()
		stream, err := c.Core.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: LoadContainer, Follow: true}).Stream(ctx)
		if err != nil {
			mu.Lock()
			following[pod] = false // try again on the next look
			mu.Unlock()
			return
		}
		defer stream.Close()
		sc := bufio.NewScanner(stream)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // the JSON result's lines can be long
		for sc.Scan() {
			if p, ok, err := results.ParseProgressLine(sc.Bytes()); ok && err == nil {
				report(pod, p)
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
			if err == nil {
				for _, p := range pods.Items {
					if !containerStarted(&p, LoadContainer) {
						continue
					}
					mu.Lock()
					start := !following[p.Name] && !stopped
					if start {
						following[p.Name] = true
						wg.Add(1)
					}
					mu.Unlock()
					if start {
						go follow(p.Name)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		cancel()
		wg.Wait()
	}
}

// containerStarted reports whether the pod's container has started (runs
// or has run), so that its log can be read.
func containerStarted(p *corev1.Pod, container string) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == container {
			return s.State.Running != nil || s.State.Terminated != nil
		}
	}
	return false
}
