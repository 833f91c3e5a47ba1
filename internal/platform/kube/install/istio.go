package install

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/report"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MeshInstall changes how --install-mesh installs one mesh's modes (those
// whose CLI is For): another CLI (a build of a pinned version), arguments
// added to the command that installs the control plane (the images,
// settings, Linkerd's identity), objects applied once it succeeded
// (Istio's EnvoyFilters), and which proxy build the run measures. Nil: the
// CLI from PATH with the mesh's own images, nothing added. IstioBuilt and
// LinkerdBuilt make the ones for the meshes built here.
type MeshInstall struct {
	// For is the CLI whose commands this changes (mesh.Cluster.CLI:
	// "istioctl", "linkerd").
	For string
	// CLI is the binary to run instead ("": For on PATH).
	CLI string
	// Args are added to the command that installs the control plane
	// (`istioctl install`, `linkerd install`).
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
	// Describe says in a line what is installed (the build and where its
	// settings came from), for the run's log and manifest
	// ("mesh_install").
	Describe string
	// Close, when set, removes what the install's commands read and no
	// longer need (files meshbench made for them); called once the plan
	// ran.
	Close func() error
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

// Commands applies mi to the commands of its CLI (others unchanged): its
// CLI runs them, and its Args go on the one that installs the control
// plane.
func (mi *MeshInstall) Commands(cmds []Command) []Command {
	if mi == nil {
		return cmds
	}
	out := make([]Command, len(cmds))
	for i, c := range cmds {
		if c.Args[0] == mi.For {
			c.Args = slices.Clone(c.Args)
			if mi.CLI != "" {
				c.Args[0] = mi.CLI
			}
			if c.ControlPlane {
				c.Args = append(c.Args, mi.Args...)
			}
		}
		out[i] = c
	}
	return out
}

// CLIVersion is CLIVersion with mi's CLI for the modes of its mesh.
func (mi *MeshInstall) CLIVersion(ctx context.Context, mode string) (string, error) {
	if mi == nil || mi.CLI == "" || MeshCLI(mode) != mi.For {
		return CLIVersion(ctx, mode)
	}
	return CLIVersionAt(ctx, mode, mi.CLI)
}

// Done calls mi.Close when set (nil-safe).
func (mi *MeshInstall) Done() error {
	if mi == nil || mi.Close == nil {
		return nil
	}
	return mi.Close()
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
		For:             "istioctl",
		CLI:             b.Path("istioctl"),
		Describe:        fmt.Sprintf("Istio %s built here (%s), images %s/*:%s, upstream-Envoy overlay", istio.Version, b.Dir, cmpOr(hub, istio.DefaultHub), cmpOr(tag, istio.Version)),
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

// UpstreamEnvoyOverlay is where the mesh-wide EnvoyFilter of meshbench's
// upstream-Envoy overlay lives once IstioBuilt installed it (its kind,
// namespace and name). A cluster that holds it runs meshbench's Istio
// images, whose every waypoint needs its own copy of the overlay
// (istio.WaypointEnvoyFilter) or its Envoy refuses istiod's config and
// crash-loops, whichever run installed the mesh.
func UpstreamEnvoyOverlay() (gvk schema.GroupVersionKind, namespace, name string, err error) {
	objs, err := istio.EnvoyFilters()
	if err != nil {
		return gvk, "", "", err
	}
	if len(objs) == 0 {
		return gvk, "", "", fmt.Errorf("the upstream-Envoy overlay has no EnvoyFilter")
	}
	u := objs[0].(*unstructured.Unstructured)
	return u.GroupVersionKind(), u.GetNamespace(), u.GetName(), nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
