// Package e2e holds meshbench's end-to-end tests on real Kubernetes nodes
// (internal/testkit/kubetest with RealNodes: containerd, runc, kubelet,
// kube-proxy and CoreDNS on this machine, pods running meshbench's own
// image built by internal/sys/image). Each test runs the CLI in-process, as a
// user types it, and checks what the user sees and what the cluster is
// left with; TestCountersMatchProc also checks the kubelet's CPU counters
// (internal/platform/kube/kubelet) against /proc of the container's processes. It
// has no code of its own outside the tests.
package e2e
