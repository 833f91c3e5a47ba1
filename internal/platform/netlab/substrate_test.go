package netlab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/testkit/schemas"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// findEnvoy is the project's Envoy (make envoy), for sidecar cells.
func findEnvoy(t *testing.T) *envoy.Binary {
	t.Helper()
	wd, _ := os.Getwd()
	bin, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..", "..")})
	if err != nil {
		testutil.SkipOrFail(t, fmt.Sprintf("%v (make envoy installs it)", err))
	}
	return bin
}

// netnsOf is the prefix and subnet a run's manifest records.
func netnsOf(t *testing.T, m *results.RunManifest) (string, netip.Prefix) {
	t.Helper()
	n, ok := m.Options["netns"].(map[string]any)
	if !ok {
		t.Fatalf("manifest options have no netns entry: %v", m.Options)
	}
	prefix, _ := n["prefix"].(string)
	subnet, err := netip.ParsePrefix(n["subnet"].(string))
	if err != nil || prefix == "" {
		t.Fatalf("manifest netns entry %v: %v", n, err)
	}
	return prefix, subnet
}

// runCell runs one cell (local.Run) on the netns substrate with o and
// what every cell test here shares: a 1-s warm-up, 500-ms drain and
// sampling, a log of its own (returned, for failure messages). A run that
// fails fails the test with its log; after the test, gone (checkRunGone,
// checkLinkerdGone) checks that the run left nothing.
func runCell(t *testing.T, o local.Options, gone func(*testing.T, *results.RunManifest)) (*local.Result, *testutil.SyncBuffer) {
	t.Helper()
	log := &testutil.SyncBuffer{}
	o.Warmup, o.Drain, o.SampleInterval, o.Log = time.Second, 500*time.Millisecond, 500*time.Millisecond, log
	res, err := local.Run(context.Background(), o)
	if res == nil || res.Manifest == nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Cleanup(func() { gone(t, res.Manifest) })
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	return res, log
}

// checkRunGone is checkGone for the namespaces the run's manifest names.
func checkRunGone(t *testing.T, m *results.RunManifest) {
	t.Helper()
	prefix, _ := netnsOf(t, m)
	checkGone(t, m, prefix)
}

// checkGone fails when a process of the run still exists or a namespace
// or link of its prefix is left.
func checkGone(t *testing.T, m *results.RunManifest, prefix string) {
	t.Helper()
	for _, p := range m.Processes {
		if p.PID > 0 && syscall.Kill(p.PID, 0) == nil {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
				t.Errorf("process %s (pid %d) outlived the run", p.Name, p.PID)
			}
		}
	}
	if busy, err := netns.NamesInUse(prefix); err != nil || busy {
		t.Errorf("after the run, names %s* are still in use (err %v)", prefix, err)
	}
}

// TestSubstrateRun runs a whole cell (local.Run) on the netns substrate:
// mode none (no proxy) and ambient with the real ztunnels and the four
// ALLOW rules, the apps and the load inside their pods. Every request is
// answered; in ambient the server node's ztunnel logs the client's
// identity arriving over HBONE, the ztunnels are sampled as the data
// plane and the manifest names the substrate and ztunnel's sha256; after
// the run no process, namespace or link is left.
func TestSubstrateRun(t *testing.T) {
	bin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	sum, err := ztunnel.FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		mode     topology.Mode
		policies int
		replicas int
		bodySize int // 0: the default 615 bytes
	}{
		{"none", topology.ModeNone, 0, 2, 1024},    // the baseline: same namespaces, no ztunnel; a 1 KB answer
		{"ambient", topology.ModeAmbient, 4, 2, 0}, // real ztunnel per node, ztunnel enforcing the rules
		{"sidecar", topology.ModeSidecar, 4, 2, 0}, // Envoy sidecars in the pods, istio-init's capture, RBAC in the server sidecars
	} {
		t.Run(tc.name, func(t *testing.T) {
			mo := topology.DefaultOptions()
			mo.Mode, mo.Policies, mo.Replicas = tc.mode, tc.policies, tc.replicas
			sub := &Substrate{Ztunnel: bin}
			out := filepath.Join(t.TempDir(), "run")
			o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 3 * time.Second, BodySize: tc.bodySize},
				OutDir: out, Meshbench: mb, Substrate: sub}
			if tc.mode == topology.ModeSidecar {
				o.Envoy = findEnvoy(t)
			}
			res, _ := runCell(t, o, checkRunGone)
			_, subnet := netnsOf(t, res.Manifest)
			lr := res.Load
			wantAllOK(t, lr, 100)
			wantBody := int64(max(tc.bodySize, 615))
			if lr.Completed > 0 && lr.BytesIn != wantBody*int64(lr.Completed) {
				t.Errorf("%d bytes in over %d answers, want %d each", lr.BytesIn, lr.Completed, wantBody)
			}
			if got := res.Manifest.Options["substrate"]; got != SubstrateName {
				t.Errorf("manifest substrate %v, want %s", got, SubstrateName)
			}
			var zt []results.ProcessInfo
			for _, p := range res.Manifest.Processes {
				if strings.HasPrefix(p.Name, "ztunnel-") {
					zt = append(zt, p)
				}
			}
			for _, u := range res.Topology.LoadTargets {
				if !strings.HasPrefix(u.URL, "http://"+subnet.Addr().String()[:5]) {
					t.Errorf("load target %s is not a pod of the lab's subnet %s", u.URL, subnet)
				}
			}
			if tc.mode == topology.ModeSidecar {
				// The load called the server pods' own IPs: every request
				// reached the client sidecar only through istio-init's
				// capture, crossed to a server sidecar over mTLS and passed
				// its RBAC.
				var down, hs, allowed uint64
				for name, ps := range res.EnvoyStats {
					if name == "client-sidecar" && ps.Downstream != nil && ps.Downstream.RqTotal != nil {
						down = *ps.Downstream.RqTotal
					}
					if strings.HasPrefix(name, "server-") && ps.DownstreamTLS != nil && ps.DownstreamTLS.Handshakes != nil {
						hs += *ps.DownstreamTLS.Handshakes
					}
					if ps.RBAC != nil && ps.RBAC.Allowed != nil {
						allowed += *ps.RBAC.Allowed
					}
				}
				if down < uint64(lr.Completed) || hs == 0 || allowed == 0 {
					t.Errorf("client sidecar saw %d requests of %d sent, server sidecars %d TLS handshakes and %d RBAC allows: capture or mTLS missing",
						down, lr.Completed, hs, allowed)
				}
				if len(zt) != 0 {
					t.Errorf("sidecar mode runs ztunnel: %v", zt)
				}
				return
			}
			if tc.mode == topology.ModeNone {
				if len(zt) != 0 || res.Manifest.Options["ztunnel"] != nil || res.NodeProxyStats != nil {
					t.Errorf("mode none runs ztunnel: %v %v %v", zt, res.Manifest.Options["ztunnel"], res.NodeProxyStats)
				}
				return
			}
			// ztunnel's own counters: both node proxies carried the cell's
			// connections, every one mutual TLS, the client's node as
			// source and the servers' as destination.
			for _, name := range []string{"ztunnel-node1", "ztunnel-node2"} {
				s, ok := res.NodeProxyStats[name]
				reporter := map[string]string{"ztunnel-node1": "source", "ztunnel-node2": "destination"}[name]
				if !ok || s.MTLSOpened() == 0 || s.PlaintextOpened() != 0 || s.OpenedByReporter[reporter] != s.ConnectionsOpened || s.BytesSent == 0 {
					t.Errorf("%s stats %+v: want mutual TLS connections only, reported as %s, and bytes", name, s, reporter)
				}
				for _, f := range []string{name + ".start.txt", name + ".end.txt"} {
					if _, err := os.Stat(filepath.Join(out, results.NodeProxyDir, f)); err != nil {
						t.Errorf("raw scrape: %v", err)
					}
				}
			}
			if res.Manifest.Derived["node_proxy_mtls_connections"] == 0 || res.Manifest.Derived["node_proxy_other_connections"] != 0 {
				t.Errorf("derived mTLS figures %v", res.Manifest.Derived)
			}
			if len(zt) != 2 {
				t.Fatalf("want the two nodes' ztunnels among the processes, got %v", zt)
			}
			for _, p := range zt {
				if p.Category != sample.CategoryDataPlane || !strings.HasPrefix(p.Component, "node proxy node") {
					t.Errorf("ztunnel %s classified %s / %s, want data-plane / node proxy", p.Name, p.Category, p.Component)
				}
			}
			if dp := res.Summary.Category(sample.CategoryDataPlane); dp == nil || dp.Processes != 2 {
				t.Errorf("data plane summary %+v, want the two ztunnels", dp)
			}
			z, _ := res.Manifest.Options["ztunnel"].(map[string]any)
			if z["sha256"] != sum || !strings.Contains(z["version"].(string), "62d8265") {
				t.Errorf("manifest ztunnel %v, want sha256 %s and its version", z, sum)
			}
			b, err := os.ReadFile(filepath.Join(out, "netns", "ztunnel-node2.log"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(`src.identity="spiffe://cluster.local/ns/default/sa/client"`)) ||
				!bytes.Contains(b, []byte(`direction="inbound"`)) {
				t.Errorf("the server node's ztunnel logged no inbound HBONE from the client:\n%s", b)
			}
		})
	}
}

// TestSubstrateUpFailsClean: a ztunnel that answers `version` but exits
// at once fails the run while it waits for the first node; the
// namespaces and links made by then are removed.
func TestSubstrateUpFailsClean(t *testing.T) {
	requirements(t)
	mb := testutil.BuildMeshbench(t)
	dir := t.TempDir()
	fake := filepath.Join(dir, "ztunnel")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n[ \"$1\" = version ] && { echo 'version.BuildInfo{fake}'; exit 0; }\necho 'fake ztunnel: exiting' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	subnet, prefix := freeLab(t, map[string]bool{})
	mo := topology.DefaultOptions()
	mo.Mode = topology.ModeAmbient
	_, err := local.Run(context.Background(), local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(10), Duration: time.Second},
		OutDir: filepath.Join(dir, "run"), Meshbench: mb, Substrate: &Substrate{Ztunnel: fake, Prefix: prefix, Subnet: subnet}})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") && !strings.Contains(err.Error(), "ztunnel") {
		t.Fatalf("run with a ztunnel that exits: err %v, want ztunnel's exit", err)
	}
	if busy, err := netns.NamesInUse(prefix); err != nil || busy {
		t.Errorf("after the failed run, names %s* are still in use (err %v)", prefix, err)
	}
}

// TestSubstrateInterrupt is Ctrl-C on a real `meshbench run --substrate
// netns --mesh ambient` in its measured window: exit 130, the manifest
// written, and no process, namespace or link left.
func TestSubstrateInterrupt(t *testing.T) {
	bin := requirements(t)
	m := interruptRun(t, "--ztunnel", bin, "--mesh", "ambient", "--rate", "50")
	prefix, _ := netnsOf(t, m)
	checkGone(t, m, prefix)
}

// TestSubstrateBench runs a real `meshbench bench` plan of none and
// ambient at two rates on the netns substrate, reusing each topology
// across its rates: every cell valid, the plan manifest says netns, each
// topology ran on one lab, and nothing is left.
func TestSubstrateBench(t *testing.T) {
	bin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	out := filepath.Join(t.TempDir(), "bench")
	cmd := exec.Command(mb, "bench", "--substrate", "netns", "--ztunnel", bin, "--mesh", "none,ambient", "--rate", "50,100",
		"--repetitions", "1", "--duration", "2s", "--warmup", "1s", "--drain", "500ms", "--sample-interval", "500ms", "--quiet", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, b)
	}
	pm, err := results.ReadPlanManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if pm.Substrate != SubstrateName {
		t.Errorf("plan manifest substrate %q, want %s", pm.Substrate, SubstrateName)
	}
	if len(pm.Labs) != 2 {
		t.Errorf("want one lab per topology (2), got %d", len(pm.Labs))
	}
	for _, lab := range pm.Labs {
		if len(lab.Cells) != 2 || lab.Error != "" {
			t.Errorf("lab %s ran cells %v (error %q), want both rates", lab.Topology, lab.Cells, lab.Error)
		}
	}
	for id, st := range pm.Cells {
		if st.State != results.CellDone || !st.Valid {
			t.Errorf("cell %s: %s valid %v %v %s", id, st.State, st.Valid, st.Invalid, st.Error)
			continue
		}
		m, err := results.ReadManifest(results.CellDir(out, id))
		if err != nil {
			t.Fatal(err)
		}
		prefix, _ := netnsOf(t, m)
		checkGone(t, m, prefix)
		if !strings.HasPrefix(id, "ambient") {
			continue
		}
		// Each cell's own connections, also the second cell on a kept-up
		// lab (counters as deltas): the server node's ztunnel saw the
		// load's 16 connections (and the few of its preflight), all mTLS,
		// not the sum of both cells'.
		var st map[string]results.NodeProxyStats
		if err := readJSON(filepath.Join(results.CellDir(out, id), results.NodeProxyStatsFile), &st); err != nil {
			t.Fatal(err)
		}
		s := st["ztunnel-node2"]
		if s.MTLSOpened() < 16 || s.MTLSOpened() > 24 || s.PlaintextOpened() != 0 {
			t.Errorf("cell %s: server node ztunnel %+v, want 16 to 24 mutual TLS connections (the cell's own)", id, s)
		}
	}
	// Every file of a netns plan matches its published schema, the node
	// proxies' own counters (only netns runs write them) included.
	v, err := schemas.ValidateTree(out, "../../../schema")
	if err != nil {
		t.Fatal(err)
	}
	for _, sch := range []string{"node-proxy-stats.v1.schema.json", "run-manifest.v1.schema.json", "samples.v1.schema.json", schemas.PlanFileSchema} {
		if len(v.BySchema[sch]) == 0 {
			t.Errorf("no file validated against %s: %v", sch, v.BySchema)
		}
	}
	for sch, files := range v.BySchema {
		t.Logf("%s: %d file(s), e.g. %s", sch, len(files), files[0])
	}
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// TestSubstrateTwoLabs runs two ambient cells at once on one Substrate
// (two labs side by side, as two plans on one host would): each gets its
// own name prefix, both are valid with all their connections mTLS, and
// neither leaves anything.
func TestSubstrateTwoLabs(t *testing.T) {
	bin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	sub := &Substrate{Ztunnel: bin}
	type out struct {
		res *local.Result
		err error
	}
	ch := make(chan out, 2)
	for i := range 2 {
		go func() {
			mo := topology.DefaultOptions()
			mo.Mode = topology.ModeAmbient
			res, err := local.Run(context.Background(), local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(50), Duration: 3 * time.Second, Warmup: time.Second, Drain: 500 * time.Millisecond, SampleInterval: 500 * time.Millisecond},
				OutDir: filepath.Join(t.TempDir(), "run"+strconv.Itoa(i)), Meshbench: mb, Substrate: sub})
			ch <- out{res, err}
		}()
	}
	prefixes := map[string]bool{}
	for range 2 {
		o := <-ch
		if o.res == nil || o.res.Manifest == nil {
			t.Fatalf("run: %v", o.err)
		}
		prefix, _ := netnsOf(t, o.res.Manifest)
		prefixes[prefix] = true
		checkGone(t, o.res.Manifest, prefix)
		if o.err != nil || !o.res.Manifest.Valid {
			t.Errorf("lab %s: %v %v", prefix, o.err, o.res.Manifest.Invalid)
		}
		for name, s := range o.res.NodeProxyStats {
			if s.MTLSOpened() == 0 || s.PlaintextOpened() != 0 {
				t.Errorf("lab %s %s: %+v", prefix, name, s)
			}
		}
	}
	if len(prefixes) != 2 {
		t.Errorf("the two labs shared a prefix: %v", prefixes)
	}
}

// interruptRun starts a real `meshbench run --substrate netns` with args
// for 60 s, sends it SIGINT one second into its measured window, and
// returns the manifest it wrote, after checking it exited 130 in bounded
// time.
func interruptRun(t *testing.T, args ...string) *results.RunManifest {
	t.Helper()
	mb := testutil.BuildMeshbench(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(mb, append(append([]string{"run", "--substrate", "netns"}, args...),
		"--duration", "60s", "--warmup", "1s", "--sample-interval", "250ms", "--out", out)...)
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	// Generous: ztunnels and their first certificates, or the Linkerd
	// proxies, take seconds on a loaded 2-core machine.
	deadline := time.After(90 * time.Second)
	for !strings.Contains(stderr.String(), "phase measure") {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("meshbench run ended before its window (%v):\n%s", err, stderr.String())
		case <-deadline:
			t.Fatalf("no measured window after 90s:\n%s", stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
		done <- err
	case <-time.After(60 * time.Second):
		t.Fatalf("meshbench run still running 60s after SIGINT:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130\n%s", err, stderr.String())
	}
	m, rerr := results.ReadManifest(out)
	if rerr != nil {
		t.Fatalf("no manifest after the interrupt: %v", rerr)
	}
	return m
}

// wantAllOK fails t unless the load completed at least `least` requests and
// every one was answered 200.
func wantAllOK(t *testing.T, lr *results.LoadResult, least int64) {
	t.Helper()
	if lr.Completed < least || lr.Success != lr.Completed {
		t.Errorf("%d of %d requests answered 200: %v %v", lr.Success, lr.Completed, lr.StatusCodes, lr.Errors)
	}
}
