package netlab

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/pki"
)

// The ingress gateway istiod configures, as Istio's default profile
// installs it (manifests/charts/gateways/istio-ingress: Deployment and
// Service istio-ingressgateway in istio-system, pods labelled istio:
// ingressgateway, service account istio-ingressgateway-service-account,
// the Service's https port 443 on the pods' 8443), and what a user's
// cluster adds to send traffic through it: an Istio Gateway terminating
// TLS with a credential from a Secret, and a VirtualService to the
// service.
const (
	ingressName = "istio-ingressgateway"
	// ingressSelector is the label the Gateway selects its pods by.
	ingressSelector = "ingressgateway"
	// ingressHTTPSPort is the Service's https port (the Gateway's
	// server port, which istiod translates to the pods' PortGateway).
	ingressHTTPSPort = 443
	// gatewayObject names the Gateway, the VirtualService and the
	// serving certificate's Secret.
	gatewayObject = "meshbench-gateway"
	// gatewayHandshakes counts the TLS handshakes the gateway's HTTPS
	// listener (0.0.0.0:8443, as istiod names it) accepted.
	gatewayHandshakes = "listener.0.0.0.0_8443.ssl.handshake"
)

// ambientGatewayWhat is the manifest's word on the gateway in the
// ambient modes: the same gateway as with sidecars, not captured by
// ztunnel (Istio enrols no gateway pod), which istiod has send HBONE
// to the ambient pods' ztunnels itself (PILOT_ENABLE_SENDING_HBONE,
// on with ambient), and through the waypoint when the service is
// labelled istio.io/ingress-use-waypoint.
const ambientGatewayWhat = "the gateway as Istio's default profile runs it (pilot-agent proxy router, istio-ingressgateway, not enrolled in ambient), its listener and routes from an Istio Gateway and VirtualService, its serving certificate from a Secret over istiod's SDS; it sends HBONE to the ambient pods itself (through the waypoint: the services labelled istio.io/ingress-use-waypoint)"

// ingressUseWaypoint is the Service label with which Istio's gateways
// send a service's traffic through its waypoint (by default they skip
// it and send to the pods).
const ingressUseWaypoint = "istio.io/ingress-use-waypoint"

// IstiodGateway is the lab's ingress gateway configured by istiod: its
// pod (gatewayPod) runs `pilot-agent proxy router`, its listener and
// routes come from an Istio Gateway and VirtualService, its serving
// certificate from Cert as a Secret istiod serves over SDS.
type IstiodGateway struct {
	// To is the service the gateway sends the load to.
	To ServiceSpec
	// Cert is the gateway's serving certificate (the load trusts its CA).
	Cert *pki.Workload
}

// isIngress reports whether pod p is the lab's ingress gateway.
func isIngress(p *Pod) bool { return p.Spec.Name == gatewayPod }

// ingressLabels are the gateway pod's labels, as the chart sets them.
func ingressLabels() map[string]string {
	return map[string]string{"app": ingressName, "istio": ingressSelector,
		"service.istio.io/canonical-name": ingressName, "sidecar.istio.io/inject": "false"}
}

// gatewayObjects are the chart's Service and SDS Role for the gateway,
// and the user's Secret, Gateway and VirtualService.
func gatewayObjects(gw *IstiodGateway) []runtime.Object {
	ns := topology.IdentityIngress.Namespace
	obj := func(apiVersion, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
		u := map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": namespace}}
		for k, v := range fields {
			u[k] = v
		}
		return &unstructured.Unstructured{Object: u}
	}
	port := func(name string, port, target int) map[string]any {
		return map[string]any{"name": name, "port": int64(port), "targetPort": int64(target), "protocol": "TCP"}
	}
	selector := map[string]any{"app": ingressName, "istio": ingressSelector}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	host := gw.To.Name + "." + gw.To.Namespace + ".svc.cluster.local"
	return []runtime.Object{
		obj("v1", "Service", ns, ingressName, map[string]any{"spec": map[string]any{
			"type": "ClusterIP", "selector": selector,
			"ports": []any{port("status-port", 15021, 15021), port("http2", 80, 8080), port("https", ingressHTTPSPort, topology.PortGateway)},
		}}),
		// istiod serves the Gateway's credential only to a gateway whose
		// service account may list the Secrets of its namespace.
		obj("rbac.authorization.k8s.io/v1", "Role", ns, ingressName+"-sds", map[string]any{"rules": []any{map[string]any{
			"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get", "watch", "list"}}}}),
		obj("rbac.authorization.k8s.io/v1", "RoleBinding", ns, ingressName+"-sds", map[string]any{
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ingressName + "-sds"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": topology.IdentityIngress.ServiceAccount}}}),
		obj("v1", "Secret", ns, gatewayObject, map[string]any{"type": "kubernetes.io/tls",
			"data": map[string]any{"tls.crt": b64(gw.Cert.CertPEM()), "tls.key": b64(gw.Cert.KeyPEM())}}),
		obj("networking.istio.io/v1", "Gateway", ns, gatewayObject, map[string]any{"spec": map[string]any{
			"selector": map[string]any{"istio": ingressSelector},
			"servers": []any{map[string]any{
				"port":  map[string]any{"number": int64(ingressHTTPSPort), "name": "https", "protocol": "HTTPS"},
				"tls":   map[string]any{"mode": "SIMPLE", "credentialName": gatewayObject},
				"hosts": []any{"*"},
			}},
		}}),
		obj("networking.istio.io/v1", "VirtualService", gw.To.Namespace, gatewayObject, map[string]any{"spec": map[string]any{
			"hosts": []any{"*"}, "gateways": []any{ns + "/" + gatewayObject},
			"http": []any{map[string]any{"route": []any{map[string]any{"destination": map[string]any{
				"host": host, "port": map[string]any{"number": int64(gw.To.Port)}}}}}},
		}}),
	}
}

// gatewayPKI makes the CA the load trusts (its ca.pem in pkiDir, where
// the run's load reads it, as it does the hand-rendered gateway's) and
// the gateway's serving certificate for its pod's address.
func gatewayPKI(pkiDir string, addr netip.Addr) (*pki.Workload, error) {
	ca, err := pki.NewCA(topology.TrustDomain)
	if err != nil {
		return nil, err
	}
	if _, err := ca.WriteFiles(pkiDir); err != nil {
		return nil, err
	}
	w, err := ca.IssueServing(gatewayPod, []netip.Addr{addr}, pki.Options{})
	if err != nil {
		return nil, err
	}
	return w, os.WriteFile(filepath.Join(pkiDir, "gateway-serving.pem"), w.CertPEM(), pki.CertFileMode)
}

// gatewayURL is where the load reaches the gateway's HTTPS listener.
func gatewayURL(p *Pod) string {
	return "https://" + netip.AddrPortFrom(p.IP, topology.PortGateway).String() + "/"
}

// gatewayLine is the cell's line on the gateway from istiod.
func gatewayLine(requests, handshakes float64) string {
	return fmt.Sprintf("gateway (config from istiod): its Envoy (pilot-agent proxy router; Istio Gateway and VirtualService) completed %.0f requests and accepted %s TLS handshakes over the cell.",
		requests, strconv.FormatFloat(handshakes, 'f', 0, 64))
}
