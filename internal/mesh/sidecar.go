package mesh

func init() {
	c := istioCluster(IstioProfileDefault)
	c.NamespaceLabels = map[string]string{"istio-injection": "enabled"}
	c.LoadPodAnnotations = map[string]string{"sidecar.istio.io/nativeSidecar": "true"}
	// The pod's ProxyConfig: the injector passes it to pilot-agent
	// (istio-proxy's PROXY_CONFIG), which starts Envoy with
	// --concurrency.
	c.ThreadsAnnotation, c.ThreadsValue = "proxy.istio.io/config", "concurrency: %d"
	c.Enrolled = Enrolment{What: "every app pod has an istio-proxy sidecar", Container: "istio-proxy"}
	c.Components = []Component{IstioSidecar, IstioControl}
	register(&Mesh{
		Name:         "sidecar",
		Order:        1,
		Kind:         KindSidecar,
		Product:      Istio,
		DataPlane:    "an Envoy sidecar (istio-proxy) beside every pod",
		ControlPlane: "istiod",
		Local:        true,
		Plaintext:    true,
		SMPType:      "ISTIO",
		SMPLabels:    map[string]string{"istio.mode": "sidecar"},
		Emulates:     "Istio sidecar mode",
		Cluster:      c,
		Parts: map[Part]PartSpec{PartControlPlane: istiodPart,
			PartSidecar: {What: "the server's Envoy sidecar", Container: "istio-proxy", Scope: ScopeAppPod}},
	})
}
