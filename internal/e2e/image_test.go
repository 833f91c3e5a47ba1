package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/nodes"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestImageCommand: `meshbench image` twice on the same binary prints the
// same digest and writes the same archive; bad input is one line and exit
// 2 with nothing written.
func TestImageCommand(t *testing.T) {
	bin := testutil.BuildMeshbench(t)
	dir := t.TempDir()
	var digests []string
	var archives [][]byte
	for i := range 2 {
		f := filepath.Join(dir, "image"+string(rune('a'+i))+".tar")
		inv := meshbench(t, nil, "image", "--binary", bin, "--tag", "kubetest.local/meshbench:v1", "-o", f)
		if inv.code != 0 {
			t.Fatalf("exit %d", inv.code)
		}
		digests = append(digests, strings.TrimSpace(inv.stdout))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, b)
	}
	if digests[0] != digests[1] || !strings.HasPrefix(digests[0], "kubetest.local/meshbench:v1@sha256:") {
		t.Errorf("digests %q", digests)
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two archives of the same binary differ")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"image"}, "nothing to do"},                                         // no output chosen
		{[]string{"image", "-o", "x.tar", "--load", "docker:x"}, "is not kind, k3d"}, // unknown load target
		{[]string{"image", "-o", "x.tar", "--binary", "/bin/ls"}, "CGO_ENABLED=0"},   // dynamic binary
		{[]string{"image", "-o", "x.tar", "--tag", "m:latest"}, "latest"},            // a tag that makes Kubernetes pull
		{[]string{"image", "-o", "x.tar", "--binary", "/nonexistent"}, "not a file"}, // no such binary
	} {
		inv := meshbench(t, nil, tc.args...)
		if inv.code != 2 || !strings.Contains(inv.stderr, tc.want) || strings.Count(strings.TrimSpace(inv.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tc.args, inv.code, inv.stderr, tc.want)
		}
	}
	if _, err := os.Stat("x.tar"); err == nil {
		t.Error("bad input wrote x.tar")
	}
}

// TestImageLoadIntoNodes: `meshbench image --load containerd:SOCKET` puts
// the image into each real node's containerd, and a pod runs it there
// with no pull.
func TestImageLoadIntoNodes(t *testing.T) {
	kc := kubetest.Require(t)
	c := connect(t, kc)
	bin := testutil.BuildMeshbench(t)
	const ref = "kubetest.local/meshbench:loaded"
	for _, n := range kc.Real.Nodes {
		inv := meshbench(t, nil, "image", "--binary", bin, "--tag", ref, "--load", "containerd:"+n.Socket, "--ctr", filepath.Join(nodes.BinDir(), "ctr"))
		if inv.code != 0 || !strings.Contains(inv.stderr, "loaded "+ref+" into containerd:"+n.Socket) {
			t.Fatalf("loading into %s: exit %d", n.Name, inv.code)
		}
	}
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "loaded", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: kc.Real.Nodes[len(kc.Real.Nodes)-1].Name, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "m", Image: ref, Args: []string{"--version"}}}},
	}
	if _, err := c.Core.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.Core.CoreV1().Pods("default").Delete(ctx, "loaded", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	var phase corev1.PodPhase
	waitFor(t, time.Minute, "the pod to finish", func() bool {
		p, err := c.Core.CoreV1().Pods("default").Get(ctx, "loaded", metav1.GetOptions{})
		if err != nil {
			return false
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed
	})
	if phase != corev1.PodSucceeded {
		t.Fatalf("pod %s", phase)
	}
	out, err := kc.Kubectl(ctx, "logs", "-n", "default", "loaded")
	if err != nil || !strings.Contains(string(out), "meshbench version") {
		t.Errorf("logs: %v %q", err, out)
	}
}
