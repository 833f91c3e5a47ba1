package mesh

// What Istio's three modes (sidecar.go, ambient.go, waypoint.go) share.

// Istio's components, as the kube platform's classifier tells them apart.
const (
	IstioSidecar Component = "istio-sidecar"
	IstioControl Component = "istio-control"
	Ztunnel      Component = "ztunnel"
	Waypoint     Component = "waypoint"
)

// IstioNamespace is where istioctl installs Istio's control plane.
const IstioNamespace = "istio-system"

// The istioctl profiles the Istio modes install with. The ambient profile
// runs sidecars too, so a plan with ambient and sidecar cells installs
// Istio once, with it.
const (
	IstioProfileDefault = "default"
	IstioProfileAmbient = "ambient"
)

// istioCluster is the cluster side every Istio mode starts from: istioctl
// with profile, istiod available.
func istioCluster(profile string) Cluster {
	return Cluster{
		CLI:          "istioctl",
		VersionArgs:  []string{"istioctl", "version", "--remote=false", "--short"},
		Install:      []Command{{Args: []string{"istioctl", "install", "-y", "--set", "profile=" + profile}, ControlPlane: true}},
		Namespace:    IstioNamespace,
		APIGroup:     "istio.io",
		Deployments:  []string{"istiod"},
		IstioProfile: profile,
	}
}

// ambientEnrolment is how ambient and waypoint pods show they are in the
// mesh: istio-cni's redirection annotation.
var ambientEnrolment = Enrolment{
	What:       "every app pod is redirected to ztunnel (ambient.istio.io/redirection)",
	Annotation: "ambient.istio.io/redirection", Value: "enabled",
}
