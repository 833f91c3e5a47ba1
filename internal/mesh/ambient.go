package mesh

func init() {
	c := istioCluster(IstioProfileAmbient)
	c.DaemonSets = []string{"ztunnel"}
	c.NamespaceLabels = map[string]string{"istio.io/dataplane-mode": "ambient"}
	c.Enrolled = ambientEnrolment
	c.Components = []Component{Ztunnel, IstioControl}
	register(&Mesh{
		Name:         "ambient",
		Order:        2,
		Kind:         KindNodeProxy,
		Product:      Istio,
		DataPlane:    "one L4 node proxy (ztunnel) per node, HBONE between nodes",
		ControlPlane: "istiod",
		Local:        true,
		NoPlaintext:  "HBONE is always mTLS",
		SMPType:      "ISTIO",
		SMPLabels:    map[string]string{"istio.mode": "ambient"},
		Emulates:     "Istio ambient mode",
		Cluster:      c,
		Parts:        map[Part]PartSpec{PartNodeProxy: ztunnelPart, PartControlPlane: istiodPart},
	})
}
