package istio

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh/manifest"
)

//go:embed envoyfilters.yaml
var envoyFiltersYAML []byte

// OverlaySettings are the upstream-Envoy overlay's `istioctl install
// --set` values (part 1; part 2 is EnvoyFilters), each with why:
var OverlaySettings = []struct{ Set, Why string }{
	{"values.global.variant=", "no -distroless suffix on the images' tags (the ambient profile adds it)"},
	{"values.global.imagePullPolicy=IfNotPresent", "the images are imported into the nodes, never pulled"},
	{"values.telemetry.enabled=false", "no default metrics provider: istiod would send the istio.stats filter (stats.PluginConfig)"},
	{"values.pilot.env.PILOT_ENABLE_METADATA_EXCHANGE=false", "no istio.metadata_exchange filters (TCP and HTTP peer metadata)"},
	{"values.pilot.env.PILOT_ENABLE_ALPN_FILTER=false", "no istio.alpn filter (ALPN override on outbound mTLS)"},
	{"values.pilot.env.AMBIENT_ENABLE_MULTI_NETWORK_WAYPOINT=false", "waypoints: no istio.double_hbone filter state (Istio-only object factory)"},
}

// EnvoyFilters are the overlay's mesh-wide EnvoyFilters (envoyfilters.yaml).
func EnvoyFilters() ([]runtime.Object, error) {
	return decodeObjects(envoyFiltersYAML, "envoyfilters.yaml")
}

// GatewayCRDs are the Gateway API CRDs the build's Istio pins (the
// build's GatewayCRDsFile): waypoints are Gateways of class
// istio-waypoint.
func GatewayCRDs(b Build) ([]runtime.Object, error) {
	data, err := os.ReadFile(b.Path(GatewayCRDsFile))
	if err != nil {
		return nil, err
	}
	return decodeObjects(data, b.Path(GatewayCRDsFile))
}

func decodeObjects(data []byte, name string) ([]runtime.Object, error) {
	objs, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return objs, nil
}

// InstallArgs are what `istioctl install` gets besides the profile and the
// cluster: the images (HUB/NAME:TAG) and the overlay's settings.
func InstallArgs(hub, tag string) []string {
	if hub == "" {
		hub = DefaultHub
	}
	if tag == "" {
		tag = Version
	}
	args := []string{"--set", "hub=" + hub, "--set", "tag=" + tag}
	for _, s := range OverlaySettings {
		args = append(args, "--set", s.Set)
	}
	return args
}

// WaypointEnvoyFilter is the overlay's EnvoyFilter for one waypoint: the
// same patches as the mesh-wide one, in the waypoint's namespace with
// targetRefs naming its Gateway (Istio applies EnvoyFilters to waypoints
// only that way; the mesh-wide one reaches sidecars only).
func WaypointEnvoyFilter(namespace, gateway string) []runtime.Object {
	objs, err := EnvoyFilters()
	if err != nil || len(objs) == 0 {
		return nil // envoyfilters.yaml is embedded: TestInstallRenders decodes it
	}
	u := objs[0].(*unstructured.Unstructured)
	u.SetNamespace(namespace)
	u.SetName(u.GetName() + "-" + gateway)
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway,
	}}, "spec", "targetRefs")
	return []runtime.Object{u}
}

// CRDs are Istio's CustomResourceDefinitions from its own install
// manifests: what `istioctl manifest generate` (the build's istioctl,
// its embedded charts) renders for the minimal profile, kept to the
// CRDs (for an API server that runs istiod outside it, as the lab's).
func CRDs(ctx context.Context, b Build) ([]runtime.Object, error) {
	objs, err := generate(ctx, b)
	if err != nil {
		return nil, err
	}
	var crds []runtime.Object
	for _, o := range objs {
		if u := o.(*unstructured.Unstructured); u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
		}
	}
	if len(crds) == 0 {
		return nil, errors.New("istioctl manifest generate printed no CustomResourceDefinition")
	}
	return crds, nil
}

// InjectorTemplates are the injector's config and values as Istio's
// install manifests render them (the istio-sidecar-injector ConfigMap of
// the minimal profile): the templates istiod renders a waypoint's
// Deployment and Service from, which it reads from
// ./var/lib/istio/inject/{config,values} when it runs outside a pod.
func InjectorTemplates(ctx context.Context, b Build) (config, values string, err error) {
	objs, err := generate(ctx, b)
	if err != nil {
		return "", "", err
	}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		if u.GetKind() != "ConfigMap" || u.GetName() != "istio-sidecar-injector" {
			continue
		}
		config, _, _ = unstructured.NestedString(u.Object, "data", "config")
		values, _, _ = unstructured.NestedString(u.Object, "data", "values")
		if config == "" || values == "" {
			return "", "", errors.New("istioctl manifest generate: the istio-sidecar-injector ConfigMap lacks config or values")
		}
		return config, values, nil
	}
	return "", "", errors.New("istioctl manifest generate printed no istio-sidecar-injector ConfigMap")
}

// generate is what `istioctl manifest generate` renders for the minimal
// profile.
func generate(ctx context.Context, b Build) ([]runtime.Object, error) {
	cmd := exec.CommandContext(ctx, b.Path("istioctl"), "manifest", "generate", "--set", "profile=minimal")
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("istioctl manifest generate: %w: %s", err, msg)
	}
	return decodeObjects(out, "istioctl manifest generate")
}
