package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
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
	if asked(topology.ModeSidecar) {
		out = append(out, istiodCheck(netErr))
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
		out = append(out, linkerdControllersCheck(netErr))
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

// istiodCheck says whether --control-plane istiod can configure the
// lab's sidecars here: the Istio build (make istio-tools), the lab API
// server's binaries (make k8s-tools) and the netns substrate. Optional:
// a warning at most, as the lab's own configs are the default.
func istiodCheck(netErr error) localCheck {
	const name = "control plane istiod"
	b, err := istio.Open(istio.DefaultDir())
	if err == nil {
		_, _, err = labapi.Check()
	}
	if err == nil && netErr != nil {
		err = errors.New("it runs only on the netns substrate, which cannot be made here")
	}
	if err != nil {
		return localCheck{name, oneLine(err) + "; sidecars get the lab's hand-rendered configs (--control-plane lab)", "warn"}
	}
	return localCheck{name, "can run here: istiod and pilot-agent " + istio.Version + " from " + b.Dir + ", a lab API server from " + labapi.BinDir() + " (--control-plane istiod)", "ok"}
}

// linkerdControllersCheck says whether --control-plane linkerd can
// configure the lab's Linkerd proxies here: Linkerd's build (make
// linkerd-tools), the lab API server's binaries (make k8s-tools) and the
// netns substrate. Optional: a warning at most, as the stand-in is the
// default.
func linkerdControllersCheck(netErr error) localCheck {
	const name = "control plane linkerd"
	b, err := release.Open(release.DefaultDir())
	if err == nil {
		_, _, err = labapi.Check()
	}
	if err == nil && netErr != nil {
		err = errors.New("it runs only on the netns substrate, which cannot be made here")
	}
	if err != nil {
		return localCheck{name, oneLine(err) + "; Linkerd's proxies get the lab's stand-in (--control-plane lab)", "warn"}
	}
	return localCheck{name, "can run here: Linkerd's controllers " + release.Version + " from " + b.Dir + ", a lab API server from " + labapi.BinDir() + " (--control-plane linkerd)", "ok"}
}
