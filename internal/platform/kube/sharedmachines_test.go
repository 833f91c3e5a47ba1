package kube

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/report"
)

// TestSharedMachines: nodes with one boot ID are grouped, and the node
// table says their rows double count.
func TestSharedMachines(t *testing.T) {
	nodes := []sample.NodeSummary{{Name: "b", BootID: "x"}, {Name: "a", BootID: "x"}, {Name: "c", BootID: "y"}, {Name: "d"}}
	g := sample.SharedMachines(nodes)
	if len(g) != 1 || strings.Join(g[0], ",") != "a,b" {
		t.Errorf("groups %v, want [[a b]]", g)
	}
	var b bytes.Buffer
	if err := report.NodeTable(&b, nodes, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Nodes a, b share one machine (same boot ID)") {
		t.Errorf("table:\n%s", b.String())
	}
	// The rows from the kubelet's counters say so too (their boot IDs
	// come from the Node objects, as on the metrics API's path).
	b.Reset()
	if err := report.NodeTable(&b, nodes, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Node usage from the kubelet's counters") || !strings.Contains(b.String(), "Nodes a, b share one machine (same boot ID)") {
		t.Errorf("table from the counters:\n%s", b.String())
	}
	b.Reset()
	_ = report.NodeTable(&b, []sample.NodeSummary{{Name: "a", BootID: "x"}, {Name: "b", BootID: "y"}}, false)
	if strings.Contains(b.String(), "share one machine") {
		t.Errorf("different machines said to share one:\n%s", b.String())
	}
}
