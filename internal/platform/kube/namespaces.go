package kube

import (
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
)

// TableNamespaces are the namespaces of the seed reports' per-namespace
// table of a cell of s: its mesh's (istio-system, linkerd; none for mode
// none), then the app's; the load's is shown apart (the seed reports' load
// ran outside the cluster).
func TableNamespaces(s Spec) (rows []string, load string) {
	s = s.WithDefaults()
	if m, ok := mesh.Get(string(s.Mesh.Mode)); ok && m.Kind != mesh.KindNone && m.Cluster.Namespace != "" {
		rows = append(rows, m.Cluster.Namespace)
	}
	return append(rows, s.AppNamespace), s.LoadNamespace
}

// namespaceTable is the run's per-namespace table over the measured
// window's rounds.
func (r *run) namespaceTable(window []sample.Round) sample.NamespaceTable {
	rows, load := TableNamespaces(r.o.Spec)
	return sample.Namespaces(window, rows, load)
}
