package netlab

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/sys/cgroup"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestFaultsOnRealProxies runs cells with a fault against the real
// proxies: ztunnel, the waypoint's and a sidecar's Envoy, Linkerd's
// proxy killed at +1s and started again (a new process, sampled under
// the same name, its exit not a failure of the cell), a CPU limit on
// ztunnel and a hog beside it, each undone when the load ends: the cell
// is valid, its record says when the fault took effect and ended, with no
// error, and nothing (process, namespace, cgroup) is left.
func TestFaultsOnRealProxies(t *testing.T) {
	bin := requirements(t)
	mb := testutil.BuildMeshbench(t)
	for _, tc := range []struct {
		mode   topology.Mode
		fault  string
		killed string // the process a kill replaces; "" for the others
	}{
		{topology.ModeAmbient, "kill:node-proxy@1s", "ztunnel-node2"},
		{topology.ModeSidecar, "kill:sidecar@1s", "server-0-sidecar"},
		{topology.ModeWaypoint, "kill:waypoint@1s", "waypoint"},
		{topology.ModeLinkerd, "kill:sidecar@1s", "server-0-linkerd-proxy"},
		{topology.ModeAmbient, "cpu-limit:node-proxy=100@1s", ""},
		{topology.ModeAmbient, "noisy-neighbour:300@1s+1s", ""},
		// Faces: the gRPC backend's first replica of two, through
		// Linkerd's proxies.
		{topology.ModeLinkerd, "slow-replica:color/1=100ms@1s+1s", ""},
	} {
		t.Run(string(tc.mode)+"-"+tc.fault, func(t *testing.T) {
			f, err := fault.Parse(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			mo := topology.DefaultOptions()
			mo.Mode = tc.mode
			if f.Service != "" {
				mo.App, mo.Replicas = topology.AppFaces, 2
			}
			sub := &Substrate{Ztunnel: bin}
			gone := checkRunGone
			if tc.mode == topology.ModeLinkerd {
				sub.LinkerdProxy, sub.Meshbench = linkerdProxy(t), mb
				gone = checkLinkerdGone
			}
			o := local.Options{Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(100), Duration: 3 * time.Second, Timeout: 3 * time.Second, Fault: f},
				OutDir: filepath.Join(t.TempDir(), "run"), Meshbench: mb, Substrate: sub}
			if tc.mode != topology.ModeAmbient && tc.mode != topology.ModeLinkerd {
				o.Envoy = findEnvoy(t)
			}
			res, log := runCell(t, o, gone)
			t.Cleanup(func() { checkNoCgroups(t) })
			m := res.Manifest
			if !m.Valid {
				t.Errorf("invalid: %v\n%s", m.Invalid, log.String())
			}
			if m.Options["fault"] != f.String() {
				t.Errorf("options.fault %v, want %s", m.Options["fault"], f)
			}
			rec, ok := m.Options["fault_record"].(fault.Record)
			if !ok {
				t.Fatalf("no fault record: %#v", m.Options["fault_record"])
			}
			if len(rec.Errors) > 0 || rec.StartS < 0.99 || rec.StartS > 1.5 || rec.EndS <= rec.StartS {
				t.Errorf("record %+v\n%s", rec, log.String())
			}
			if f.Service != "" && !strings.Contains(log.String(), "color replica 0 answers 100ms later") {
				t.Errorf("log does not say the color replica was slowed:\n%s", log.String())
			}
			if tc.killed == "" {
				return
			}
			var pids []int
			for _, p := range m.Processes {
				if p.Name == tc.killed {
					pids = append(pids, p.PID)
				}
			}
			if len(pids) != 2 || pids[0] == pids[1] {
				t.Errorf("processes named %s: pids %v, want the killed one and its restart", tc.killed, pids)
			}
			if !strings.Contains(log.String(), tc.killed+" ready again") {
				t.Errorf("log does not say the restart:\n%s", log.String())
			}
			if res.Load == nil || res.Load.Completed < 250 {
				t.Errorf("load %+v: want the whole window's answers, failed or not", res.Load)
			}
		})
	}
}

// TestFaultInterrupt is Ctrl-C on a real `meshbench run` while its fault
// holds ztunnel under a CPU limit: exit 130, the fault undone (no limit
// cgroup of the run left), nothing else left.
func TestFaultInterrupt(t *testing.T) {
	bin := requirements(t)
	m := interruptRun(t, "--ztunnel", bin, "--mesh", "ambient", "--rate", "50", "--fault", "cpu-limit:node-proxy=200@0s")
	prefix, _ := netnsOf(t, m)
	checkGone(t, m, prefix)
	checkNoCgroups(t)
	if _, ok := m.Options["fault_record"]; !ok {
		t.Error("the interrupted cell's manifest has no fault record")
	}
}

// checkNoCgroups fails when a fault cgroup whose maker is gone is left,
// or one of this test process's.
func checkNoCgroups(t *testing.T) {
	t.Helper()
	h, err := cgroup.Find()
	if err != nil {
		t.Fatal(err)
	}
	if st := h.Stale(); len(st) > 0 {
		t.Errorf("fault cgroups left: %v", st)
	}
	es, _ := os.ReadDir(h.Root)
	for _, e := range es {
		if strings.HasPrefix(e.Name(), cgroup.Prefix) && strings.HasSuffix(e.Name(), "-"+strconv.Itoa(os.Getpid())) {
			t.Errorf("fault cgroup %s left", e.Name())
		}
	}
}
