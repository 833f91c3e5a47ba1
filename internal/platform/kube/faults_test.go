package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/fault"
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

// TestControlService: a slow-replica cell's slowed service (the entry,
// or faces' color) serves its control API on the pod's loopback; the
// others, and every service of other cells, run as before; an app that
// is not meshbench's is refused.
func TestControlService(t *testing.T) {
	argsOf := func(o Options) map[string]string {
		if err := o.defaults(); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, svc := range o.Spec.appServices() {
			out[svc.name] = strings.Join(svc.args, " ")
		}
		return out
	}
	opts := func(app topology.App, f string) Options {
		var o Options
		o.Duration, o.Mesh = time.Second, topology.Options{Mode: topology.ModeSidecar, App: app, Replicas: 2}
		o.Fault, _ = fault.Parse(f)
		return o
	}
	static := opts(topology.AppStatic, "slow-replica:1=200ms@2s")
	if a := argsOf(static); !strings.HasSuffix(a["static"], "--control 127.0.0.1:9990") {
		t.Errorf("slow-replica on static: %q; want its control on the loopback", a["static"])
	}
	faces := opts(topology.AppFaces, "slow-replica:color/1=200ms@2s")
	if a := argsOf(faces); !strings.HasSuffix(a["color"], "--control 127.0.0.1:9990") || strings.Contains(a["face"]+a["smiley"], "--control") {
		t.Errorf("slow-replica:color on faces: %v; want color's control only", a)
	}
	if a := argsOf(opts(topology.AppStatic, "kill:sidecar@2s")); strings.Contains(a["static"], "--control") {
		t.Errorf("a kill cell: %q; want no control", a["static"])
	}
	bad := opts(topology.AppStatic, "slow-replica:1=200ms@2s")
	bad.Spec.AppImage = "nginx:1.27"
	if err := bad.defaults(); err == nil || !strings.Contains(err.Error(), "only meshbench's own workloads serve a control API") {
		t.Errorf("slow-replica with an app image: %v; want it refused", err)
	}
}
