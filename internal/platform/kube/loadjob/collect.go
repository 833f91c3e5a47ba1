package loadjob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/results"
)

// Collect reads the log of every pod of the Job: each is one
// worker's JSON result, which says which worker it is (workerIndex; the
// pod's completion index must agree). keep is handed every log as it was
// read, with its name in the results directory (logs/load-POD.log).
func Collect(ctx context.Context, core kubernetes.Interface, job *batchv1.Job, workers int, keep func(name string, log []byte)) ([]*results.LoadResult, error) {
	pods, err := core.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
	if err != nil {
		return nil, err
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	var parts []*results.LoadResult
	var errs []error
	seen := map[int]string{} // worker index -> pod
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		body, err := core.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: Container}).DoRaw(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("log of load worker %s: %w", p.Name, err))
			continue
		}
		keep(filepath.Join(results.LogsDir, "load-"+p.Name+".log"), body)
		lr, err := ParseWorkerLog(body)
		if err != nil {
			errs = append(errs, fmt.Errorf("log of load worker %s: %w", p.Name, err))
			continue
		}
		idx, err := workerIndex(lr, &p, workers)
		if err != nil {
			errs = append(errs, fmt.Errorf("load worker %s: %w", p.Name, err))
			continue
		}
		if other, dup := seen[idx]; dup {
			errs = append(errs, fmt.Errorf("load workers %s and %s both report worker index %d", other, p.Name, idx))
			continue
		}
		seen[idx] = p.Name
		parts = append(parts, lr)
	}
	if len(parts) != workers {
		errs = append(errs, fmt.Errorf("%d of %d load workers left a result", len(parts), workers))
	}
	return parts, errors.Join(errs...)
}

// workerIndex is the worker index a load worker's result reports
// (results.LoadResult.Worker; an unsplit result is worker 0 of 1), checked
// against the run's worker count and, as a cross-check, against the
// pod's Job completion index, which must be the same.
func workerIndex(lr *results.LoadResult, pod *corev1.Pod, workers int) (int, error) {
	share := results.WorkerShare{Index: 0, Count: 1}
	if lr.Worker != nil {
		share = *lr.Worker
	}
	if share.Count != workers {
		if lr.Worker == nil {
			return 0, fmt.Errorf("its result says no worker index, but the load is split among %d workers (is the image's meshbench older than this one?)", workers)
		}
		return 0, fmt.Errorf("its result is worker %d of %d, but the load is split among %d workers", share.Index, share.Count, workers)
	}
	ann, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return 0, fmt.Errorf("no completion index (annotation %s): not a pod of an Indexed Job", batchv1.JobCompletionIndexAnnotation)
	}
	if ci, err := strconv.Atoi(ann); err != nil || ci != share.Index {
		return 0, fmt.Errorf("its completion index is %q but its result is worker %d of %d", ann, share.Index, share.Count)
	}
	return share.Index, nil
}

// ParseWorkerLog reads the JSON result in a worker's log: the document
// that starts at the first line beginning with '{' (a log may hold
// warnings before it; `meshbench load --output-format json` prints one
// indented document). The log holds stdout and stderr together, and the
// container runtime copies the two streams line by line from two
// goroutines, so the engine's running figures (stderr, --progress-log)
// can land between the result's lines — or inside one, where the runtime
// split a long line into partial entries. Every progress line is taken
// out, wherever it starts, before the result is read: each is
// results.ProgressLinePrefix up to its newline, text the indented JSON
// cannot hold (its strings hold no newline and no such words).
func ParseWorkerLog(body []byte) (*results.LoadResult, error) {
	body = withoutProgressLines(body)
	start := 0
	if !bytes.HasPrefix(body, []byte("{")) {
		i := bytes.Index(body, []byte("\n{"))
		if i < 0 {
			return nil, fmt.Errorf("no JSON result in %d bytes of log", len(body))
		}
		start = i + 1
	}
	return results.Read(bytes.NewReader(body[start:]))
}

// withoutProgressLines is body without its progress lines (each from
// results.ProgressLinePrefix to its newline, or to the end).
func withoutProgressLines(body []byte) []byte {
	prefix := []byte(results.ProgressLinePrefix)
	if !bytes.Contains(body, prefix) {
		return body
	}
	out := make([]byte, 0, len(body))
	for {
		i := bytes.Index(body, prefix)
		if i < 0 {
			return append(out, body...)
		}
		out = append(out, body[:i]...)
		j := bytes.IndexByte(body[i:], '\n')
		if j < 0 {
			return out
		}
		body = body[i+j+1:]
	}
}

// WriteResult writes the merged result lr into dir: load.json and the
// latency over time as HdrHistogram's interval log.
func WriteResult(dir *results.RunDir, lr *results.LoadResult) error {
	var b bytes.Buffer
	if err := lr.Write(&b); err != nil {
		return err
	}
	if err := dir.WriteFile(results.LoadFile, b.Bytes()); err != nil {
		return err
	}
	// Latency over time as HdrHistogram's interval log, from the
	// workers' merged intervals.
	hl, err := results.Hlog(lr)
	if err != nil || hl == nil {
		return err
	}
	return dir.WriteFile(results.HlogFile, hl)
}
