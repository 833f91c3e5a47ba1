package bootstrap

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// combos lists every option combination the renderer supports, over
// modes × policies × gateway × protocol × mtls, with 2 replicas on 2 app
// nodes (so every multi-node path is rendered) and the attacker wherever a
// mesh is on.
func combos() []topology.Options {
	var out []topology.Options
	for _, mode := range topology.Modes {
		for _, policies := range []int{0, 4, 6} {
			for _, gateway := range []bool{false, true} {
				for _, proto := range []topology.Protocol{topology.ProtocolHTTP, topology.ProtocolTCP} {
					for _, mtls := range []bool{true, false} {
						o := topology.DefaultOptions()
						o.Mode, o.Policies, o.Gateway, o.Protocol, o.MTLS = mode, policies, gateway, proto, mtls
						o.Replicas, o.Nodes = 2, 2
						o.Attacker = mode != topology.ModeNone
						if o.Validate() != nil {
							continue // e.g. policies without a mesh, ambient without mTLS
						}
						out = append(out, o)
					}
				}
			}
		}
	}
	// Odd shapes: more nodes than replicas, uneven spreads.
	for _, shape := range []struct {
		mode              topology.Mode
		replicas, nodes   int
		gateway, attacker bool
	}{
		{topology.ModeAmbient, 1, 3, true, true},
		{topology.ModeWaypoint, 3, 2, false, true},
		{topology.ModeSidecar, 3, 2, true, false},
	} {
		o := topology.DefaultOptions()
		o.Mode, o.Replicas, o.Nodes, o.Gateway, o.Attacker, o.Policies = shape.mode, shape.replicas, shape.nodes, shape.gateway, shape.attacker, 4
		out = append(out, o)
	}
	return out
}

func comboName(o topology.Options) string {
	return fmt.Sprintf("%s-r%dn%d-p%d-gw%v-%s-mtls%v", o.Mode, o.Replicas, o.Nodes, o.Policies, o.Gateway, o.Protocol, o.MTLS)
}

// TestEnvoyValidatesEveryCombination renders every combination and runs
// the real `envoy --mode validate` on each distinct config (identical
// configs across combinations are validated once).
func TestEnvoyValidatesEveryCombination(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Envoy")
	}
	bin := envoyBinary(t)
	dir := t.TempDir()
	type job struct{ name, path string }
	var jobs []job
	seen := map[[32]byte]bool{}
	n := 0
	for _, o := range combos() {
		topo, err := topology.Plan(o)
		if err != nil {
			t.Fatalf("%s: %v", comboName(o), err)
		}
		cdir := filepath.Join(dir, comboName(o))
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			t.Fatal(err)
		}
		pki := newTestPKI(t, cdir, topo)
		configs, err := Render(topo, pki.Paths)
		if err != nil {
			t.Fatalf("%s: %v", comboName(o), err)
		}
		if len(configs) != len(topo.Proxies) {
			t.Errorf("%s: %d configs for %d proxies", comboName(o), len(configs), len(topo.Proxies))
		}
		for name, js := range configs {
			n++
			// Certificate paths differ per combination; compare the rest.
			key := sha256.Sum256([]byte(strings.ReplaceAll(string(js), cdir, "")))
			if seen[key] {
				continue
			}
			seen[key] = true
			path := filepath.Join(cdir, name+".json")
			if err := os.WriteFile(path, js, 0o644); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, job{comboName(o) + "/" + name, path})
		}
	}
	t.Logf("%d combinations, %d configs, %d distinct", len(combos()), n, len(jobs))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ch := make(chan job)
	for range 2 {
		wg.Go(func() {
			for j := range ch {
				if err := envoy.Validate(ctx, bin, j.path); err != nil {
					mu.Lock()
					t.Errorf("%s: %v", j.name, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

// TestGolden keeps one small topology per mode under review: any change of
// a rendered config shows up as a golden-file diff (go test -update).
func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*topology.Options)
	}{
		// No mesh, through the gateway (the only proxy of mode none).
		{"none-gateway", func(o *topology.Options) { o.Gateway = true }},
		// Sidecar pair with the 4 ALLOW rules.
		{"sidecar-policies", func(o *topology.Options) { o.Mode, o.Policies = topology.ModeSidecar, 4 }},
		// Sidecar pair in plaintext.
		{"sidecar-plaintext", func(o *topology.Options) { o.Mode, o.MTLS = topology.ModeSidecar, false }},
		// Sidecars at L4.
		{"sidecar-tcp", func(o *topology.Options) { o.Mode, o.Protocol = topology.ModeSidecar, topology.ProtocolTCP }},
		// Ambient, 2 replicas on 2 nodes, the 4 rules.
		{"ambient-policies", func(o *topology.Options) { o.Mode, o.Replicas, o.Nodes, o.Policies = topology.ModeAmbient, 2, 2, 4 }},
		// Waypoint with the gateway.
		{"waypoint-gateway", func(o *topology.Options) { o.Mode, o.Gateway = topology.ModeWaypoint, true }},
		// Faces: per-service listeners and clusters, gRPC (HTTP/2) to color.
		{"faces-sidecar", func(o *topology.Options) { o.Mode, o.App, o.Policies = topology.ModeSidecar, topology.AppFaces, 5 }},
		{"faces-waypoint", func(o *topology.Options) { o.Mode, o.App = topology.ModeWaypoint, topology.AppFaces }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := topology.DefaultOptions()
			tt.mut(&o)
			topo, err := topology.Plan(o)
			if err != nil {
				t.Fatal(err)
			}
			configs, err := Render(topo, fakeCertPaths(topo))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range topo.Proxies {
				testutil.Golden(t, filepath.Join(tt.name, p.Name+".json"), configs[p.Name])
			}
		})
	}
}

// TestMissingCerts reports every missing certificate at once.
func TestMissingCerts(t *testing.T) {
	o := topology.DefaultOptions()
	o.Mode, o.Gateway, o.Attacker = topology.ModeAmbient, true, true
	topo, err := topology.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(topo, CertPaths{})
	if err == nil {
		t.Fatal("Render without certificates succeeded")
	}
	for _, want := range []string{
		"no certificate and key for default/attacker (spiffe://cluster.local/ns/default/sa/attacker), which ztunnel-node1 presents",
		"no certificate and key for default/server",
		"no certificate and key for istio-system/istio-ingressgateway-service-account",
		"no serving certificate and key for gateway (hosts [127.0.3.10])",
		"no CA bundle file",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// No mesh, no gateway: nothing to render, nothing needed.
	topo, _ = topology.Plan(topology.DefaultOptions())
	configs, err := Render(topo, CertPaths{})
	if err != nil || len(configs) != 0 {
		t.Errorf("mode none: %d configs, %v", len(configs), err)
	}
}
