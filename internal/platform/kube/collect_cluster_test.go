package kube

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestCollectWorkerLogsAgainstCluster: loadjob.Collect, here beside the
// package's shared test cluster (a second package would start its own):
// the results of a real Indexed Job's
// two pods, read through the pods/log API, are taken by the worker index
// each result reports; the pod's completion index is checked against it.
// Logs swapped between the pods, or a result of a differently split load,
// are refused, naming the pod and both indexes.
func TestCollectWorkerLogsAgainstCluster(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	cs, _ := clusterClients(t, kc)
	const ns = "mbw-load"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, ns) })
	two := int32(2)
	mode := batchv1.IndexedCompletion
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "load"},
		Spec: batchv1.JobSpec{Parallelism: &two, Completions: &two, CompletionMode: &mode,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: LoadContainer, Image: "example.invalid/meshbench:1"}}}}}}
	job, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	kubetest.Poll(ctx, t, time.Minute, "the Job's 2 pods to succeed", func() (bool, string) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=load"})
		if err != nil {
			return false, err.Error()
		}
		pods = pods[:0]
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodSucceeded {
				pods = append(pods, p)
			}
		}
		return len(pods) == 2, fmt.Sprintf("%d of %d pods succeeded", len(pods), len(l.Items))
	})
	// pods by completion index.
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return strings.Compare(a.Annotations[batchv1.JobCompletionIndexAnnotation], b.Annotations[batchv1.JobCompletionIndexAnnotation])
	})
	if pods[0].Annotations[batchv1.JobCompletionIndexAnnotation] != "0" || pods[1].Annotations[batchv1.JobCompletionIndexAnnotation] != "1" {
		t.Fatalf("completion indexes %q, %q", pods[0].Annotations[batchv1.JobCompletionIndexAnnotation], pods[1].Annotations[batchv1.JobCompletionIndexAnnotation])
	}

	fixture, err := results.ReadFile(filepath.Join("..", "..", "analysis", "testdata", "plan-invalid", "cells",
		"none-static-r50-x1-p0-http-pod-mtls-rep2", "load.json"))
	if err != nil {
		t.Fatal(err)
	}
	share := func(i, n int) string {
		lr := *fixture
		lr.Worker = &results.WorkerShare{Index: i, Count: n}
		var b bytes.Buffer
		if err := lr.Write(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	c, err := Connect(ctx, ConnectOptions{Kubeconfig: kc.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	var dir *results.RunDir
	collect := func(log0, log1 string) ([]*results.LoadResult, error) {
		t.Helper()
		for i, log := range []string{log0, log1} {
			if err := kc.ServePodLogs(ctx, ns, pods[i].Name, LoadContainer, log); err != nil {
				t.Fatal(err)
			}
		}
		dir, err = results.CreateRunDir(filepath.Join(t.TempDir(), "run"))
		if err != nil {
			t.Fatal(err)
		}
		return loadjob.Collect(ctx, c.Core, job, 2, func(name string, log []byte) {
			if err := dir.WriteFile(name, log); err != nil {
				t.Errorf("keeping %s: %v", name, err)
			}
		})
	}

	// Each pod's own share: both taken, and each log kept.
	parts, err := collect(share(0, 2), share(1, 2))
	if err != nil || len(parts) != 2 {
		t.Fatalf("right shares: %d parts, %v", len(parts), err)
	}
	got := []int{parts[0].Worker.Index, parts[1].Worker.Index}
	slices.Sort(got)
	if !slices.Equal(got, []int{0, 1}) {
		t.Errorf("worker indexes %v, want 0 and 1", got)
	}
	if _, err := results.Merge(parts); err != nil {
		t.Errorf("merging the collected shares: %v", err)
	}
	for _, p := range pods {
		if b, err := os.ReadFile(filepath.Join(dir.Path, results.LogsDir, "load-"+p.Name+".log")); err != nil || !bytes.HasPrefix(b, []byte("{")) {
			t.Errorf("log of %s not kept: %v", p.Name, err)
		}
	}

	// Swapped logs: the results' indexes disagree with the pods'.
	parts, err = collect(share(1, 2), share(0, 2))
	want := fmt.Sprintf("load worker %s: its completion index is \"0\" but its result is worker 1 of 2", pods[0].Name)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "0 of 2 load workers left a result") || len(parts) != 0 {
		t.Errorf("swapped logs: %d parts, error %v; want %q", len(parts), err, want)
	}

	// A result of a 3-way split in a 2-worker run.
	_, err = collect(share(0, 2), share(1, 3))
	want = fmt.Sprintf("load worker %s: its result is worker 1 of 3, but the load is split among 2 workers", pods[1].Name)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("other split: %v; want %q", err, want)
	}
}
