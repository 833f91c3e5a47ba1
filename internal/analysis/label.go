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

// meshLabelOf is MeshLabel for a cell's recorded settings, with
// IstiodConfigured where istiod configured its sidecars.
func meshLabelOf(s results.CellSettings) string {
	l := MeshLabel(s.Mesh, s.Substrate)
	if s.ControlPlane != nil && s.ControlPlane.Name == "istiod" && (s.Mesh == "sidecar" || s.Mesh == "ambient" || s.Mesh == "waypoint") {
		l += IstiodConfigured
	}
	return l
}
