// Package meshcrds holds no code: its test checks every mesh object the
// kube platform renders (kube.AppObjects) against the upstream CRDs —
// Istio's from the istio.io/api module meshbench builds with, the Gateway
// API's from sigs.k8s.io/gateway-api at the version the pinned Istio
// requires — by a strict server-side dry-run on a test cluster, so a field
// the real API server would refuse fails the suite, not a user's run.
package meshcrds
