package cli

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/report"
)

// localCheck is one row of `doctor --platform local`.
type localCheck struct {
	Name, Detail string
	// Status is "ok", "warn" or "FAIL".
	Status string
}

// localDoctor checks what the local lab needs for the modes asked (all
// local modes when none is asked; a mode not asked only warns): Envoy,
// the netns substrate (root, namespaces, the capture rules), ztunnel and
// linkerd2-proxy (mesh linkerd runs only on netns).
func localDoctor(ctx context.Context, env *Env, modes []string, envoyFlag, ztunnelFlag, linkerdFlag string) []localCheck {
	asked := func(m topology.Mode) bool { return len(modes) == 0 || slices.Contains(modes, string(m)) }
	strict := func(m topology.Mode) string {
		if len(modes) > 0 && slices.Contains(modes, string(m)) {
			return "FAIL"
		}
		return "warn"
	}
	var out []localCheck
	wd, _ := os.Getwd()
	exe, _ := os.Executable()
	needEnvoy := asked(topology.ModeSidecar) || asked(topology.ModeAmbient) || asked(topology.ModeWaypoint)
	if needEnvoy {
		bin, err := envoy.FindContext(ctx, envoy.FindOptions{Flag: envoyFlag, ProjectDir: wd, Executable: exe, Getenv: env.Getenv})
		if err != nil {
			out = append(out, localCheck{"envoy", oneLine(err) + " (sidecar, waypoint and the loopback lab's ambient need it)", "FAIL"})
		} else {
			out = append(out, localCheck{"envoy", "Envoy " + bin.Version + " at " + bin.Path, "ok"})
		}
	}
	netErr := netlab.Available(true)
	if netErr != nil {
		st := "warn"
		if asked(topology.ModeLinkerd) && len(modes) > 0 {
			st = "FAIL"
		}
		out = append(out, localCheck{"netns substrate", oneLine(netErr) + "; the lab runs on loopback (Envoy standing in for ztunnel), without mesh linkerd", st})
	} else {
		out = append(out, localCheck{"netns substrate", "network namespaces can be made, the kernel takes the capture rules (nftables over netlink; --substrate netns)", "ok"})
	}
	if asked(topology.ModeAmbient) || asked(topology.ModeWaypoint) {
		if bin, err := ztunnel.Find(ztunnelFlag, wd); err != nil {
			out = append(out, localCheck{"ztunnel", oneLine(err) + "; ambient runs on loopback with Envoy standing in", "warn"})
		} else {
			out = append(out, localCheck{"ztunnel", "Istio's ztunnel at " + bin + " (ambient on netns)", "ok"})
		}
	}
	if asked(topology.ModeLinkerd) {
		bin, err := proxy.Find(linkerdFlag, wd)
		var v proxy.Version
		if err == nil {
			v, err = proxy.GetVersion(ctx, bin)
		}
		switch {
		case err != nil:
			out = append(out, localCheck{"mesh linkerd", "linkerd2-proxy: " + oneLine(err), strict(topology.ModeLinkerd)})
		case netErr != nil:
			out = append(out, localCheck{"mesh linkerd", "found " + v.String() + " at " + bin + ", but it runs only on the netns substrate, which cannot be made here", strict(topology.ModeLinkerd)})
		default:
			out = append(out, localCheck{"mesh linkerd", "can run here: " + v.String() + " at " + bin + ", on the netns substrate with the lab's stand-in for Linkerd's control plane", "ok"})
		}
	}
	return out
}

// printLocalDoctor prints the checks as doctor's table; an error when one
// failed.
func printLocalDoctor(env *Env, checks []localCheck) error {
	rows := make([]report.DoctorCheck, len(checks))
	for i, c := range checks {
		rows[i] = report.DoctorCheck{Name: c.Name, Status: c.Status, Detail: c.Detail}
	}
	failed, _ := report.DoctorTable(env.Stdout, rows)
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(checks))
	}
	return nil
}
