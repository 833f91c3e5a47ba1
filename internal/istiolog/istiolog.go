// Package istiolog is hop timing's configuration for Istio on a cluster:
// the MeshConfig extension provider that makes Istio's Envoys write one
// JSON access-log record per request in hop timing's format
// (hops.LogFormat), and the Telemetry object (telemetry.istio.io/v1)
// that turns it on for a namespace. The records go to each proxy's
// stdout, where the pods' logs hold them. Pure: it renders objects, it
// applies nothing. (The kube platform does not read the records yet; see
// the README.)
package istiolog

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	telemetryv1alpha1 "istio.io/api/telemetry/v1alpha1"

	"github.com/meshbench/meshbench/internal/measure/hops"
)

// ProviderName is the extension provider's name in MeshConfig, which the
// Telemetry object selects.
const ProviderName = "meshbench-hops"

// hop is how a record names its proxy and hop on a cluster, where one
// mesh-wide format serves every proxy: the pod's name (Istio sets
// POD_NAME in every sidecar) and, for the hop, the pod and its upstream
// cluster (Istio's "outbound|8080||svc…" or "inbound|8080||"), which
// also names the service of outbound records.
var hop = hops.Hop{Proxy: "%ENVIRONMENT(POD_NAME)%", Label: "%ENVIRONMENT(POD_NAME)% %UPSTREAM_CLUSTER%"}

// Provider is the MeshConfig extension provider: Envoy's file access log
// to /dev/stdout with hop timing's JSON labels.
func Provider() (*meshv1alpha1.MeshConfig_ExtensionProvider, error) {
	fields := map[string]any{}
	for k, v := range hops.LogFormat(hop) {
		fields[k] = v
	}
	labels, err := structpb.NewStruct(fields)
	if err != nil {
		return nil, err
	}
	return &meshv1alpha1.MeshConfig_ExtensionProvider{Name: ProviderName,
		Provider: &meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyFileAccessLog{
			EnvoyFileAccessLog: &meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider{Path: "/dev/stdout",
				LogFormat: &meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider_LogFormat{
					LogFormat: &meshv1alpha1.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider_LogFormat_Labels{Labels: labels}}}}}, nil
}

// MeshConfigJSON is the MeshConfig fragment adding Provider, as
// `istioctl install --set meshConfig=…` or an IstioOperator's meshConfig
// takes it: {"extensionProviders":[…]}.
func MeshConfigJSON() ([]byte, error) {
	p, err := Provider()
	if err != nil {
		return nil, err
	}
	return protojson.Marshal(&meshv1alpha1.MeshConfig{ExtensionProviders: []*meshv1alpha1.MeshConfig_ExtensionProvider{p}})
}

// Telemetry is the Telemetry object that makes every proxy of namespace
// ns (istio-system: the whole mesh) log with Provider, as JSON.
func Telemetry(name, ns string) ([]byte, error) {
	spec := &telemetryv1alpha1.Telemetry{AccessLogging: []*telemetryv1alpha1.AccessLogging{{
		Providers: []*telemetryv1alpha1.ProviderRef{{Name: ProviderName}}}}}
	raw, err := protojson.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("rendering the Telemetry spec: %w", err)
	}
	obj := map[string]any{
		"apiVersion": "telemetry.istio.io/v1",
		"kind":       "Telemetry",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       json.RawMessage(raw),
	}
	return json.Marshal(obj)
}
