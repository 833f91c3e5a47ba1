package client

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podWith(waiting string, restarts int32, exit int32) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "static-1", Namespace: "mb-app"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "reg.example/m:v1"}}},
	}
	st := corev1.ContainerStatus{Name: "app", RestartCount: restarts}
	if waiting != "" {
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting, Message: "the message"}
	} else {
		st.State.Running = &corev1.ContainerStateRunning{}
	}
	if exit >= 0 {
		st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: exit}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
	return p
}

// TestStuckPod: which waiting reasons end the wait, and the one line each
// gives the user.
func TestStuckPod(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string // substrings of the error; nil: not stuck
	}{
		// an image that cannot be pulled: the command that fixes it
		{"pull", podWith("ErrImagePull", 0, -1), []string{"image reg.example/m:v1 cannot be pulled (ErrImagePull: the message)", "meshbench image --tag reg.example/m:v1 --load k3d:CLUSTER", "--push reg.example/m:v1"}},
		// the kubelet's back-off after a failed pull: the same
		{"backoff", podWith("ImagePullBackOff", 0, -1), []string{"cannot be pulled (ImagePullBackOff"}},
		// a crash loop: exit code, restarts, where to read why
		{"crash", podWith("CrashLoopBackOff", 3, 2), []string{"is crash-looping: exit code 2, 3 restarts", "kubectl logs -n mb-app static-1 -c app --previous"}},
		// a bad config (a missing Secret, say)
		{"config", podWith("CreateContainerConfigError", 0, -1), []string{"cannot start: CreateContainerConfigError: the message"}},
		// still being created: not stuck
		{"creating", podWith("ContainerCreating", 0, -1), nil},
		// running: not stuck
		{"running", podWith("", 0, -1), nil},
	} {
		p := stuckPod(tc.pod)
		if tc.want == nil {
			if p != nil {
				t.Errorf("%s: stuck: %v", tc.name, p)
			}
			continue
		}
		if p == nil {
			t.Errorf("%s: not stuck", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(p.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, p.Error(), w)
			}
		}
		if strings.Contains(p.Error(), "\n") {
			t.Errorf("%s: more than one line: %q", tc.name, p.Error())
		}
	}
	// A pod being deleted is never stuck.
	gone := podWith("CrashLoopBackOff", 1, 1)
	gone.DeletionTimestamp = &metav1.Time{}
	if p := stuckPod(gone); p != nil {
		t.Errorf("deleted pod stuck: %v", p)
	}
}
