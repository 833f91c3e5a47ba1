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
// which control plane a figure came from.
const IstiodConfigured = " (config from istiod)"

// LinkerdConfigured ends the mesh label of a linkerd cell whose proxies
// Linkerd's real controllers configured on the lab (--control-plane
// linkerd): "linkerd (config from Linkerd's controllers)".
const LinkerdConfigured = " (config from Linkerd's controllers)"

// LabConfigured ends the mesh label of a sidecar, ambient or waypoint cell
// whose manifest records the lab's fast path as its control plane
// (control_plane lab): meshbench's own Envoy configs
// (internal/mesh/envoy/bootstrap) or ztunnel's local config file, not
// what istiod would send: "sidecar (meshbench's configs)", short as
// the tables need it (ControlPlaneOf's longer words go in the reports'
// headers and columns).
const LabConfigured = " (meshbench's configs)"

// LinkerdStandIn ends the mesh label of a linkerd cell whose manifest
// records the lab's stand-in control plane
// (internal/mesh/linkerd/controlplane): "linkerd (the lab's stand-in
// control plane)".
const LinkerdStandIn = " (the lab's stand-in control plane)"

// meshLabelOf is MeshLabel for a cell's recorded settings, marked with
// who configured its proxies as the manifest recorded it:
// IstiodConfigured, LinkerdConfigured, LabConfigured or LinkerdStandIn.
// A cell with no record (a cluster, mesh none, results from before the
// record) keeps MeshLabel's; so does an Envoy stand-in for ztunnel,
// whose label already says it is meshbench's.
func meshLabelOf(s results.CellSettings) string {
	l := MeshLabel(s.Mesh, s.Substrate)
	if s.ControlPlane == nil || strings.HasSuffix(l, EnvoyStandIn) {
		return l
	}
	istio := s.Mesh == "sidecar" || s.Mesh == "ambient" || s.Mesh == "waypoint"
	switch {
	case s.ControlPlane.Name == "istiod" && istio:
		l += IstiodConfigured
	case s.ControlPlane.Name == "linkerd" && s.Mesh == "linkerd":
		l += LinkerdConfigured
	case s.ControlPlane.Name == "lab" && istio:
		l += LabConfigured
	case s.ControlPlane.Name == "lab" && s.Mesh == "linkerd":
		l += LinkerdStandIn
	}
	return l
}

// ControlPlaneOf's answers for the real control planes.
const (
	ControlPlaneIstiod  = "istiod"
	ControlPlaneLinkerd = "Linkerd's controllers"
)

// ControlPlaneOf says who configured a cell's proxies from its mesh label
// (which meshLabelOf made from the manifest's record): "istiod",
// "Linkerd's controllers", "meshbench's own configs (not istiod's)",
// "the lab's stand-in (not Linkerd's)", "meshbench's own configs (Envoy
// stand-in for ztunnel)"; "" where nothing was recorded. The CSV column
// and the HTML report's per-cell line are this.
func ControlPlaneOf(meshLabel string) string {
	switch {
	case strings.HasSuffix(meshLabel, IstiodConfigured):
		return ControlPlaneIstiod
	case strings.HasSuffix(meshLabel, LinkerdConfigured):
		return ControlPlaneLinkerd
	case strings.HasSuffix(meshLabel, LabConfigured):
		return "meshbench's own configs (not istiod's)"
	case strings.HasSuffix(meshLabel, LinkerdStandIn):
		return "the lab's stand-in (not Linkerd's)"
	case strings.HasSuffix(meshLabel, EnvoyStandIn):
		return "meshbench's own configs (Envoy stand-in for ztunnel)"
	}
	return ""
}

// CellControlPlane is ControlPlaneOf for a cell's manifest: who
// configured its proxies as the manifest recorded it, "" without a record
// (or an unreadable one).
func CellControlPlane(m *results.RunManifest) string {
	if m == nil {
		return ""
	}
	s, err := m.Settings()
	if err != nil {
		return ""
	}
	return ControlPlaneOf(meshLabelOf(s))
}
