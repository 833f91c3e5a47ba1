package plan

import (
	"slices"
	"strings"
	"testing"
)

// TestFaultAxis: the fault axis multiplies the cells of every
// configuration it means something for, each fault's ID in the cell's
// ID (none adds nothing), skips the others with the reason, round-trips
// through the canonical YAML and reaches the cell's settings.
func TestFaultAxis(t *testing.T) {
	p := mustParse(t, "f.yaml", `duration: 10s
repetitions: 2
axes:
  mesh: [none, sidecar, ambient]
  replicas: [2]
  fault: [none, "kill:node-proxy@3s", "slow-replica:1=200ms@2s+5s"]
`)
	ids := map[string]bool{}
	for _, c := range p.Cells() {
		ids[c.ID] = true
		if s := p.Settings(c); s.Fault != c.Fault {
			t.Errorf("%s: settings' fault %v, want %v", c.ID, s.Fault, c.Fault)
		}
	}
	// none: no fault, slow replica; sidecar: the same; ambient: all three.
	if len(ids) != (2+2+3)*2 {
		t.Errorf("%d cells, want 14: %v", len(ids), ids)
	}
	for _, id := range []string{
		"none-static-r100-x2-p0-http-pod-mtls-rep1",
		"ambient-static-r100-x2-p0-http-pod-mtls-fkill-node-proxy-at3s-rep2",
		"sidecar-static-r100-x2-p0-http-pod-mtls-fslow-replica-1-200ms-at2s-for5s-rep1",
	} {
		if !ids[id] {
			t.Errorf("no cell %s", id)
		}
	}
	var reasons []string
	for _, s := range p.Skipped() {
		reasons = append(reasons, s.TopologyKey+": "+s.Reason)
	}
	want := []string{
		"none-static-x2-p0-http-pod-mtls-n1: fault kill:node-proxy@3s: mesh none has no node-proxy (its parts: none)",
		"sidecar-static-x2-p0-http-pod-mtls-n1: fault kill:node-proxy@3s: mesh sidecar has no node-proxy (its parts: sidecar, control-plane)",
	}
	if strings.Join(reasons, "\n") != strings.Join(want, "\n") {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(reasons, "\n"), strings.Join(want, "\n"))
	}
	y := p.YAML()
	q := mustParse(t, "again.yaml", string(y))
	if len(q.Axes.Fault) != 3 || q.Axes.Fault[1] != p.Axes.Fault[1] || q.Axes.Fault[2] != p.Axes.Fault[2] {
		t.Errorf("round trip: %v, want %v\n%s", q.Axes.Fault, p.Axes.Fault, y)
	}
	c := p.Cells()[len(p.Cells())-1]
	if cfg, ok := p.BaselineOf(c); !ok || !strings.HasPrefix(cfg, "none-") || !strings.HasSuffix(cfg, "-fslow-replica-1-200ms-at2s-for5s") {
		t.Errorf("baseline of %s: %q %v", c.ID, cfg, ok)
	}
}

// TestFaultControlPlane: kill:control-plane is a cell with a mesh's real
// control plane (the lab runs and restarts istiod, Linkerd's destination
// pod), and skipped with the lab's own, saying which control plane to use.
func TestFaultControlPlane(t *testing.T) {
	for _, tc := range []struct {
		cp, mesh string
		cells    int
		skipped  string
	}{
		{"istiod", "none, sidecar, ambient, waypoint", 3, "none-static-x1-p0-http-pod-mtls-n1: fault kill:control-plane@1s: mesh none has no control-plane (its parts: none)"},
		{"linkerd", "none, linkerd", 1, "none-static-x1-p0-http-pod-mtls-n1: fault kill:control-plane@1s: mesh none has no control-plane (its parts: none)"},
		{"real", "none, sidecar, ambient, linkerd", 3, "none-static-x1-p0-http-pod-mtls-n1: fault kill:control-plane@1s: mesh none has no control-plane (its parts: none)"},
		{"lab", "sidecar, linkerd", 0, "linkerd-static-x1-p0-http-pod-mtls-n1: fault kill:control-plane@1s: control-plane of mesh linkerd: not with control plane lab (its stand-in control plane is not restarted by a supervisor); use control plane linkerd\n" +
			"sidecar-static-x1-p0-http-pod-mtls-n1: fault kill:control-plane@1s: control-plane of mesh sidecar: the lab runs no istiod with control plane lab (its proxies' config comes from the topology, their certificates from the lab's CA); use control plane istiod"},
	} {
		p := mustParse(t, "f.yaml", "duration: 5s\nrepetitions: 1\ncontrol_plane: "+tc.cp+"\naxes:\n  mesh: ["+tc.mesh+"]\n  fault: [\"kill:control-plane@1s\"]\n")
		if got := len(p.Cells()); got != tc.cells {
			t.Errorf("control_plane %s: %d cells, want %d", tc.cp, got, tc.cells)
		}
		var reasons []string
		for _, s := range p.Skipped() {
			reasons = append(reasons, s.TopologyKey+": "+s.Reason)
		}
		slices.Sort(reasons)
		if got := strings.Join(reasons, "\n"); got != tc.skipped {
			t.Errorf("control_plane %s: skipped:\n%s\nwant:\n%s", tc.cp, got, tc.skipped)
		}
	}
}

// TestFaultAxisProblems: a fault that does not parse, starts outside the
// window, or is given with a search is refused with what is allowed.
func TestFaultAxisProblems(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"duration: 10s\naxes:\n  fault: [\"kill:ztunnel\"]\n", `axes.fault "kill:ztunnel": unknown part "ztunnel"; allowed:`},
		{"duration: 10s\naxes:\n  fault: [\"kill:sidecar@12s\"]\n", `allowed: @AT inside the 10s measured window`},
	} {
		_, err := Parse("p.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestFaultAxisKube: on a cluster every kind runs (a kill or CPU limit
// of any part, the control plane's too (the lab skips it: it runs no istiod), and a
// kill of a part the mesh lacks is skipped with the reason, as on the lab.
// (The noisy neighbour and the slow replica: since issue 31's h31n.)
func TestFaultAxisKube(t *testing.T) {
	p := mustParse(t, "k.yaml", `platform: kube
duration: 10s
repetitions: 1
axes:
  mesh: [sidecar, ambient]
  replicas: [2]
  fault: ["kill:node-proxy@3s", "cpu-limit:control-plane=100@3s", "noisy-neighbour:500@3s", "slow-replica:1=100ms@3s"]
`)
	var ids []string
	for _, c := range p.Cells() {
		ids = append(ids, c.ID)
	}
	if all := strings.Join(ids, " "); len(ids) != 7 || !strings.Contains(all, "sidecar-static") || !strings.Contains(all, "fcpu-limit-control-plane-100m-at3s") ||
		strings.Count(all, "fnoisy-neighbour-500m-at3s") != 2 || strings.Count(all, "fslow-replica-1-100ms-at3s") != 2 {
		t.Errorf("cells %v, want sidecar's control-plane limit, noisy neighbour and slow replica, and ambient's four", ids)
	}
	if sk := p.Skipped(); len(sk) != 1 || !strings.Contains(sk[0].Reason, "mesh sidecar has no node-proxy") {
		t.Errorf("skipped %+v, want sidecar's node-proxy kill", sk)
	}
}

// TestFaultWithExternalGenerator: a fault with another tool than
// meshbench's engine is skipped with the reason (its cost is read from the
// engine's intervals), the same fault with the engine and the healthy cell
// with the tool stay cells.
func TestFaultWithExternalGenerator(t *testing.T) {
	p := mustParse(t, "g.yaml", `platform: kube
duration: 10s
repetitions: 1
axes:
  mesh: [sidecar]
  generator: [meshbench, vegeta]
  fault: [none, "kill:control-plane@3s"]
`)
	var ids []string
	for _, c := range p.Cells() {
		ids = append(ids, c.ID)
	}
	if all := strings.Join(ids, " "); len(ids) != 3 || strings.Count(all, "kill-control-plane") != 1 || strings.Count(all, "vegeta") != 1 {
		t.Errorf("cells %v, want meshbench healthy and killed, vegeta healthy", ids)
	}
	sk := p.Skipped()
	if len(sk) != 1 || !strings.Contains(sk[0].Reason, "with generator vegeta: a fault's cost is read from meshbench's engine's intervals") ||
		!strings.Contains(sk[0].Config, "vegeta") || !strings.Contains(sk[0].Config, "kill-control-plane") {
		t.Errorf("skipped %+v, want vegeta's kill with the reason", sk)
	}
}

// TestControlPlaneAuto: control_plane auto (--control-plane auto) is
// read from a file and from flags alike, written back by the canonical
// YAML, and its cells are the plan's (which control plane each mesh gets
// is chosen when the plan starts, not here).
func TestControlPlaneAuto(t *testing.T) {
	p := mustParse(t, "a.yaml", "repetitions: 1\ncontrol_plane: auto\naxes:\n  mesh: [none, sidecar, linkerd]\n")
	if p.ControlPlane != ControlPlaneAuto || len(p.Cells()) != 3 || len(p.Skipped()) != 0 {
		t.Errorf("control_plane auto: %q, %d cells, %d skipped; want auto, 3, 0", p.ControlPlane, len(p.Cells()), len(p.Skipped()))
	}
	if y := string(p.YAML()); !strings.Contains(y, "\ncontrol_plane: auto\n") {
		t.Errorf("canonical YAML lacks control_plane auto:\n%s", y)
	} else if back := mustParse(t, "back.yaml", y); back.ControlPlane != ControlPlaneAuto {
		t.Errorf("control_plane read back as %q", back.ControlPlane)
	}
	f, err := FromFlags(Flags{Mesh: "sidecar", ControlPlane: "auto"})
	if err != nil || f.ControlPlane != ControlPlaneAuto {
		t.Errorf("--control-plane auto: %v, %v", f, err)
	}
}
