package kube

import (
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/platform/kube/install"
)

// The Faces demo app as the seed tool installs it: Buoyant's chart, pinned,
// with its built-in errors and delays turned off (the benchmark measures
// the mesh, not Faces' fault injection). Spec.FacesChart selects it;
// otherwise faces runs meshbench's own face/smiley/color workloads (the
// local lab's app, from meshbench's image).
const (
	FacesChart        = "oci://ghcr.io/buoyantio/faces-chart"
	FacesChartVersion = "2.0.0-rc.7"
	// FacesRelease is the Helm release, in the app namespace.
	FacesRelease = "faces"
	// FacesEntry is the chart's entry Service (port 80), the load's target.
	FacesEntry = "face"
)

// FacesChartCommand is the `helm install` that deploys the Faces chart
// into s's app namespace (created beforehand by meshbench, with the mesh's
// enrolment): every workload with the cell's replicas, spread over nodes
// with anti-affinity from two nodes on and kept on the app nodes
// (LabelNodeRole=app) from NodeSelectorMinNodes on, as the seed tool does,
// and waited for.
func FacesChartCommand(s Spec, kubeconfig, context string) install.Command {
	s = s.WithDefaults()
	args := []string{"helm", "install", FacesRelease, FacesChart, "--version", FacesChartVersion,
		"--namespace", s.AppNamespace,
		// Faces' fault injection off: no errors, no added delays.
		"--set-string", "face.errorFraction=0", "--set-string", "backend.errorFraction=0",
		"--set-string", "face.delayBuckets=", "--set-string", "backend.delayBuckets=",
		"--set", "defaultReplicas=" + strconv.Itoa(s.Mesh.Replicas),
	}
	if s.NodeCount >= AntiAffinityMinNodes {
		for _, w := range []string{"backend", "face", "gui"} {
			args = append(args, "--set", w+".antiaffinity=true")
		}
	}
	if s.NodeCount >= NodeSelectorMinNodes {
		for _, w := range []string{"backend", "face", "gui"} {
			args = append(args, "--set", w+".affinity.key="+LabelNodeRole, "--set", w+".affinity.value="+RoleApp)
		}
	}
	args = append(args, "--wait", "--timeout", "10m")
	if kubeconfig != "" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	if context != "" {
		args = append(args, "--kube-context", context)
	}
	return install.Command{Args: args}
}

// HelmVersionCommand prints helm's version.
var HelmVersionCommand = []string{"helm", "version", "--short"}

// facesChartTarget is the chart's entry by its cluster DNS name.
func (s Spec) facesChartTarget() string {
	return "http://" + s.serviceHost(FacesEntry) + "/"
}

// facesChartProblems says why s cannot run the chart, or nil.
func (s Spec) facesChartProblems() (field, value, want string, bad bool) {
	switch {
	case s.Mesh.Policies > 0:
		return "policies", strconv.Itoa(s.Mesh.Policies), "0 with the Faces chart (its identities are the chart's own); or run meshbench's faces without the chart", true
	case s.Mesh.Protocol != "" && !strings.EqualFold(string(s.Mesh.Protocol), "http"):
		return "protocol", string(s.Mesh.Protocol), "http with the Faces chart (its port names are the chart's); or run meshbench's faces without the chart", true
	}
	return "", "", "", false
}
