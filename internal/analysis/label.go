package analysis

import (
	"strings"

	"github.com/meshbench/meshbench/internal/results"
)

// EnvoyStandIn ends the mesh label of an ambient or waypoint cell the
// local lab ran on its loopback substrate, where Envoy stands in for
// Istio's ztunnel: "ambient (Envoy stand-in for ztunnel)". Every output
// that names such a cell's mesh carries it, so no figure about the
// imitation passes for one about ztunnel.
const EnvoyStandIn = " (Envoy stand-in for ztunnel)"

// MeshLabel is how outputs name a cell's mesh: the mode, marked with
// EnvoyStandIn when substrate is loopback and the mode's node proxy is the
// Envoy stand-in (ambient, waypoint). Other substrates, platforms and
// results from before substrates ("") keep the bare mode.
func MeshLabel(mode, substrate string) string {
	if substrate == "loopback" && (mode == "ambient" || mode == "waypoint") {
		return mode + EnvoyStandIn
	}
	return mode
}

// MeshMode is the mode of a mesh label: "ambient" for "ambient (Envoy
// stand-in for ztunnel)".
func MeshMode(label string) string {
	m, _, _ := strings.Cut(label, " (")
	return m
}

// IstiodConfigured ends the mesh label of a sidecar, ambient or waypoint
// cell whose proxies the real istiod configured on the lab
// (--control-plane istiod): "sidecar (config from istiod)", "ambient
// (config from istiod)", so every table, chart and export says
// which control plane a figure came from; the lab's default,
// hand-rendered configs keep the bare mode.
const IstiodConfigured = " (config from istiod)"

// LinkerdConfigured ends the mesh label of a linkerd cell whose proxies
// Linkerd's real controllers configured on the lab (--control-plane
// linkerd): "linkerd (config from Linkerd's controllers)"; the lab's
// stand-in keeps the bare mode.
const LinkerdConfigured = " (config from Linkerd's controllers)"

// meshLabelOf is MeshLabel for a cell's recorded settings, with
// IstiodConfigured where istiod configured its sidecars and
// LinkerdConfigured where Linkerd's controllers configured its proxies.
func meshLabelOf(s results.CellSettings) string {
	l := MeshLabel(s.Mesh, s.Substrate)
	switch {
	case s.ControlPlane != nil && s.ControlPlane.Name == "istiod" && (s.Mesh == "sidecar" || s.Mesh == "ambient" || s.Mesh == "waypoint"):
		l += IstiodConfigured
	case s.ControlPlane != nil && s.ControlPlane.Name == "linkerd" && s.Mesh == "linkerd":
		l += LinkerdConfigured
	}
	return l
}
