package install

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/report"

	"k8s.io/apimachinery/pkg/runtime"
)

// MeshInstall changes how --install-mesh installs Istio's modes: another
// istioctl (a build of a pinned version), arguments added to `istioctl
// install` (the images' hub and tag, settings), objects applied once it
// succeeded (EnvoyFilters), and which proxy build the run measures. Nil:
// istioctl from PATH with Istio's own images, nothing added. Package istio
// IstioBuilt makes the one for Istio built here.
type MeshInstall struct {
	// Istioctl is the istioctl to run ("": istioctl on PATH).
	Istioctl string
	// Args are added to `istioctl install`.
	Args []string
	// Objects are applied after the install commands succeeded; kept in
	// the results as k8s/mesh-install-objects.yaml.
	Objects []runtime.Object
	// Proxy says which proxy build the run measures; recorded in the
	// manifest's options as "mesh_proxy".
	Proxy string
	// WaypointObjects, when set, are objects for a waypoint Gateway
	// (namespace, name) applied with the app's objects in waypoint mode
	// (Istio applies EnvoyFilters to a waypoint only through targetRefs
	// naming its Gateway); they go with the app's namespace.
	WaypointObjects func(namespace, gateway string) []runtime.Object
	// Syncz, when set, reads istiod's ACK table (every connected proxy,
	// each xDS type ACKed, NACKed or pending) from the cluster of
	// kubeconfig/context; a run calls it once the measured window began,
	// when every proxy of the cell is connected.
	Syncz func(ctx context.Context, kubeconfig, kubecontext string) (*SyncReport, error)
}

// SyncReport is istiod's ACK table as a run keeps it.
type SyncReport struct {
	// Proxies is the table as data (written as k8s/istiod-syncz.json).
	Proxies any
	// Table is the table as printed (k8s/istiod-acks.txt and the log).
	Table string
	// Proxy names the number of proxies; NotACKed lists "proxy TYPE:
	// why" for every type a proxy has not ACKed.
	Count    int
	NotACKed []string
}

// Commands applies mi to Istio's install commands (others unchanged).
func (mi *MeshInstall) Commands(cmds []Command) []Command {
	if mi == nil {
		return cmds
	}
	out := make([]Command, len(cmds))
	for i, c := range cmds {
		if c.Args[0] == "istioctl" {
			args := slices.Clone(c.Args)
			if mi.Istioctl != "" {
				args[0] = mi.Istioctl
			}
			c.Args = append(args, mi.Args...)
		}
		out[i] = c
	}
	return out
}

// CLIVersion is CLIVersion with mi's istioctl for Istio's modes.
func (mi *MeshInstall) CLIVersion(ctx context.Context, mode string) (string, error) {
	if mi == nil || mi.Istioctl == "" || MeshCLI(mode) != "istioctl" {
		return CLIVersion(ctx, mode)
	}
	return CLIVersionAt(ctx, mode, mi.Istioctl)
}

// IstioBuilt is how meshbench installs Istio built here: the build's istioctl,
// the images istio.Images made (hub and tag as given there; "" for the
// defaults), the Gateway API CRDs of the build (istio.GatewayCRDs), the
// upstream-Envoy overlay, and envoyBuild (Envoy's build
// string, `envoy --version`) as the proxy the run measures.
func IstioBuilt(b istio.Build, hub, tag, envoyBuild string) (*MeshInstall, error) {
	// The Gateway API CRDs first (a waypoint needs them; Apply creates
	// them before the EnvoyFilter), then the overlay's EnvoyFilters.
	objs, err := istio.GatewayCRDs(b)
	if err != nil {
		return nil, err
	}
	efs, err := istio.EnvoyFilters()
	if err != nil {
		return nil, err
	}
	objs = append(objs, efs...)
	return &MeshInstall{
		Istioctl:        b.Path("istioctl"),
		Args:            istio.InstallArgs(hub, tag),
		Objects:         objs,
		WaypointObjects: istio.WaypointEnvoyFilter,
		Syncz: func(ctx context.Context, kubeconfig, kubecontext string) (*SyncReport, error) {
			ps, err := istio.SyncStatus(ctx, b, kubeconfig, kubecontext)
			if err != nil {
				return nil, err
			}
			var tb strings.Builder
			_ = report.SyncTable(&tb, istio.SyncRows(ps))
			return &SyncReport{Proxies: ps, Table: tb.String(), Count: len(ps), NotACKed: istio.NotACKed(ps)}, nil
		},
		Proxy: fmt.Sprintf("upstream Envoy %s in meshbench's proxyv2 image (istio %s, upstream-Envoy overlay)", envoyBuild, istio.Version),
	}, nil
}
