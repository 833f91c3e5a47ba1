package kube

import (
	"strings"
	"testing"
)

// TestExcuseReplacements: a failed mTLS check of the pod a kill made is
// kept, said, and not held against the cell; another pod's failure, or
// a same-named pod in another namespace, still is.
func TestExcuseReplacements(t *testing.T) {
	checks := func() []Check {
		return []Check{
			{What: "pod static-a: its sidecar served mTLS", OK: true, Detail: "9 TLS handshakes"},
			{What: "pod static-new: its sidecar served mTLS", Detail: "0 TLS handshakes"},
		}
	}
	got, err := excuseReplacements(checks(), "mb-app", []string{"mb-app/static-new"})
	if err != nil || !got[1].OK || !strings.Contains(got[1].Detail, "0 TLS handshakes (a pod a fault made") {
		t.Errorf("the replacement's check: %+v, %v; want it excused and said", got[1], err)
	}
	if _, err := excuseReplacements(checks(), "mb-app", []string{"other-app/static-new"}); err == nil {
		t.Error("a replacement in another namespace excused this one's failure")
	}
	bad := append(checks(), Check{What: "pod static-b: its sidecar served mTLS", Detail: "3 TLS connection errors"})
	if _, err := excuseReplacements(bad, "mb-app", []string{"mb-app/static-new"}); err == nil || !strings.Contains(err.Error(), "static-b") {
		t.Errorf("another pod's failure: %v; want it kept", err)
	}
}
