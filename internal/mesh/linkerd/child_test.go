package linkerd_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/linkerd"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/controlplane"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/sys/pki"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// alive reports whether pid runs (and is no zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// TestLinkerdChildControlPlane: with Options.Meshbench the control plane
// runs as `meshbench linkerd-control-plane` in a process of its own — the
// real proxies get their certificates, endpoints and policies from it
// over the inherited listeners, a request from the client pod reaches the
// server through both proxies with the client's identity — and Close
// stops it. A child that exits before it is ready fails Up, leaving no
// proxy and no control plane behind.
func TestLinkerdChildControlPlane(t *testing.T) {
	proxyBin, ztunnelBin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	subnet, prefix := freeLab(t)
	dir := proxyDir(t)
	o := netlab.Options{Prefix: prefix, Subnet: subnet, Ztunnel: ztunnelBin, Dir: filepath.Join(dir, "netlab"),
		Nodes: []netlab.NodeSpec{{Pods: []netlab.PodSpec{{Name: "client", Identity: topology.IdentityClient}}},
			{Pods: []netlab.PodSpec{{Name: "server-0", Identity: topology.IdentityServer}}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nl, err := netlab.Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	ca, err := pki.NewRootCA(pkixName("root.linkerd.cluster.local"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods := []linkerd.Pod{
		{Name: "client", Identity: topology.IdentityClient, IP: nl.Pod("client").IP, NS: nl.Pod("client").NS, Meshed: true},
		{Name: "server-0", Identity: topology.IdentityServer, IP: nl.Pod("server-0").IP, NS: nl.Pod("server-0").NS, Meshed: true,
			Services: []string{"server"}, Ports: []int{topology.PortApp}},
	}
	services := []controlplane.Service{{Name: "server", Namespace: "default", Port: 80, TargetPort: topology.PortApp,
		VIP: nl.Services["server"]}}
	serveHTTP(t, nl.Pod("server-0"))

	m, err := linkerd.Up(ctx, linkerd.Options{Proxy: proxyBin, Dir: filepath.Join(dir, "mesh"), CA: ca, Pods: pods,
		Services: services, Meshbench: mb, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Child == nil || m.ControlPlane != nil || !alive(m.Child.PID()) {
		t.Fatalf("control plane: child %v, in-process %v", m.Child, m.ControlPlane)
	}
	pid := m.Child.PID()
	code, body, err := get(nl.Pod("client"), fmt.Sprintf("http://%s/", netip.AddrPortFrom(nl.Pod("server-0").IP, topology.PortApp)))
	if err != nil || code != 200 || !strings.HasPrefix(body, "server-0 ") {
		t.Errorf("client → server-0 through the proxies: %d %q %v", code, body, err)
	}
	st, err := m.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := st["server-0"]; s.InboundTLS < 1 || s.ClientIDs[controlplane.Name(topology.IdentityClient)] < 1 {
		t.Errorf("server-0's proxy saw %+v, want the client's request over mTLS", s)
	}
	if err := m.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if alive(pid) {
		t.Errorf("control plane (pid %d) outlived Close", pid)
	}
	if left := proxiesOf(t, filepath.Join(dir, "mesh")); len(left) > 0 {
		t.Errorf("proxies %v left after Close", left)
	}

	// A "meshbench" that exits at once: Up fails saying so, nothing left.
	fake := filepath.Join(dir, "fake-meshbench")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'fake: no control plane here' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	failDir := filepath.Join(dir, "fail")
	_, err = linkerd.Up(ctx, linkerd.Options{Proxy: proxyBin, Dir: failDir, CA: ca, Pods: pods, Services: services, Meshbench: fake})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "fake: no control plane here") {
		t.Errorf("Up with a control plane that exits: %v", err)
	}
	if left := proxiesOf(t, failDir); len(left) > 0 {
		t.Errorf("proxies %v left after the failed Up", left)
	}
	// The capture was removed: the client reaches the server directly.
	if code, body, err := get(nl.Pod("client"), fmt.Sprintf("http://%s/", netip.AddrPortFrom(nl.Pod("server-0").IP, topology.PortApp))); err != nil || code != 200 ||
		!strings.Contains(body, nl.Pod("client").IP.String()) {
		t.Errorf("after the failed Up the client reaches the server directly: %d %q %v", code, body, err)
	}
}
