package mesh

// NameLinkerd is Linkerd's mode name.
const NameLinkerd = "linkerd"

// Linkerd's components, as the kube platform's classifier tells them apart.
const (
	LinkerdSidecar Component = "linkerd-sidecar"
	LinkerdControl Component = "linkerd-control"
)

// LinkerdNamespace is where `linkerd install` puts Linkerd's control plane.
const LinkerdNamespace = "linkerd"

func init() {
	register(&Mesh{
		Name:         NameLinkerd,
		Order:        4,
		Kind:         KindSidecar,
		Product:      Linkerd,
		DataPlane:    "Linkerd's own proxy (linkerd2-proxy) beside every pod",
		ControlPlane: "linkerd-destination, linkerd-identity, linkerd-proxy-injector",
		// The lab runs the real linkerd2-proxy on the netns substrate with
		// a control plane of its own (internal/mesh/linkerd); never on loopback.
		Local:       true,
		NoPlaintext: "Linkerd's mTLS between meshed pods is always on",
		SMPType:     "LINKERD",
		Cluster: Cluster{
			CLI:         "linkerd",
			VersionArgs: []string{"linkerd", "version", "--client", "--short"},
			// Linkerd's CRDs (with its bundle of the Gateway API's when the
			// cluster has none: its policy controller watches HTTPRoutes),
			// the control plane, then `linkerd check` until it passes.
			Install: []Command{
				{Args: []string{"linkerd", "install", "--crds"}, ApplyOutput: true, NoGatewayAPI: []string{"--set", "installGatewayAPI=true"}},
				{Args: []string{"linkerd", "install"}, ApplyOutput: true, ControlPlane: true},
				{Args: []string{"linkerd", "check", "--wait", "5m"}},
			},
			Namespace:          LinkerdNamespace,
			InstalledConfigMap: "linkerd-config",
			APIGroup:           "linkerd.io",
			Deployments:        []string{"linkerd-destination", "linkerd-identity", "linkerd-proxy-injector"},
			NamespaceAnnotations: map[string]string{
				"linkerd.io/inject":                        "enabled",
				"config.linkerd.io/default-inbound-policy": "all-authenticated",
			},
			LoadPodAnnotations: map[string]string{
				"config.alpha.linkerd.io/proxy-enable-native-sidecar": "true",
				"config.beta.linkerd.io/proxy-enable-native-sidecar":  "true",
			},
			// Linkerd's per-pod setting of the proxy's cores: its injector
			// sets LINKERD2_PROXY_CORES to the limit rounded up, and the
			// proxy container a CPU limit of as many cores (a CFS quota:
			// Linkerd has no per-pod setting of its cores without it).
			ThreadsAnnotation: "config.linkerd.io/proxy-cpu-limit", ThreadsValue: "%d",
			// A limit without a request makes Kubernetes request the limit:
			// N whole cores, which a node of N cores cannot schedule beside
			// anything else. The request stays what meshbench's containers
			// ask (10m).
			ThreadsExtra: map[string]string{"config.linkerd.io/proxy-cpu-request": "10m"},
			Enrolled:     Enrolment{What: "every app pod has a linkerd-proxy sidecar", Container: "linkerd-proxy"},
			Components:   []Component{LinkerdSidecar, LinkerdControl},
		},
		Parts: map[Part]PartSpec{
			PartSidecar: {What: "the server's linkerd2-proxy", Container: "linkerd-proxy", Scope: ScopeAppPod},
			// On the lab: its stand-in control plane, as a process of its
			// own; on a cluster, the destination controller the proxies
			// resolve services with.
			PartControlPlane: {What: "Linkerd's destination controller (the lab: its stand-in)", Namespace: LinkerdNamespace,
				Selector: "linkerd.io/control-plane-component=destination", Container: "destination", Scope: ScopeAny},
		},
	})
}
