package mesh

// WaypointName is the name of the waypoint Gateway meshbench creates in the
// app namespace (and so of its service account).
const WaypointName = "waypoint"

func init() {
	c := istioCluster(IstioProfileAmbient)
	c.DaemonSets = []string{"ztunnel"}
	c.GatewayAPI = true
	c.NamespaceLabels = map[string]string{"istio.io/dataplane-mode": "ambient"}
	c.AppNamespaceLabels = map[string]string{"istio.io/use-waypoint": WaypointName}
	c.Enrolled = ambientEnrolment
	c.WaypointPod = true
	c.Components = []Component{Ztunnel, Waypoint, IstioControl}
	register(&Mesh{
		Name:         "waypoint",
		Order:        3,
		Kind:         KindWaypoint,
		Product:      Istio,
		DataPlane:    "ambient's node proxies plus an L7 Envoy waypoint for the server service",
		ControlPlane: "istiod",
		Local:        true,
		NoPlaintext:  "HBONE is always mTLS",
		SMPType:      "ISTIO",
		SMPLabels:    map[string]string{"istio.mode": "ambient", "istio.waypoint": "true"},
		Emulates:     "Istio ambient mode with a waypoint",
		Cluster:      c,
		Parts: map[Part]PartSpec{PartNodeProxy: ztunnelPart, PartControlPlane: istiodPart,
			PartWaypoint: {What: "the waypoint (Envoy)", Selector: "gateway.networking.k8s.io/gateway-name=" + WaypointName, Container: "istio-proxy", Scope: ScopeAny}},
	})
}
