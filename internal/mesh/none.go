package mesh

func init() {
	register(&Mesh{
		Name:         "none",
		Order:        0,
		Kind:         KindNone,
		DataPlane:    "none: the client calls the app directly",
		ControlPlane: "none",
		Local:        true,
		Cluster: Cluster{
			NamespaceLabels:      map[string]string{"istio-injection": "disabled"},
			NamespaceAnnotations: map[string]string{"linkerd.io/inject": "disabled"},
			Enrolled:             Enrolment{What: "no pod has a mesh proxy", NoProxy: true},
		},
	})
}
