package kube

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// TestPlacementProblem: the nodes the pods ran on against the cell's
// placement.
func TestPlacementProblem(t *testing.T) {
	apart := PodNodes{App: []string{"n1", "n2"}, Load: []string{"n3"}}
	beside := PodNodes{App: []string{"n1"}, Load: []string{"n1"}}
	mixed := PodNodes{App: []string{"n1"}, Load: []string{"n1", "n3"}}
	for _, tc := range []struct {
		name  string
		p     topology.Placement
		pn    PodNodes
		nodes int
		want  string
	}{
		{"cross apart", topology.PlacementCrossNode, apart, 4, ""},
		{"cross beside", topology.PlacementCrossNode, beside, 4, "placement cross-node, but load workers ran on n1 beside app pods"},
		{"default beside on 2 nodes", "", beside, 2, "placement cross-node, but load workers ran on n1"},
		{"default beside on 1 node", "", beside, 1, ""},
		{"same beside", topology.PlacementSameNode, beside, 4, ""},
		{"same apart", topology.PlacementSameNode, apart, 4, "placement same-node, but load workers ran on n3, which has no app pod (app on n1, n2)"},
		{"same mixed", topology.PlacementSameNode, mixed, 4, "load workers ran on n3"},
		{"nothing recorded", topology.PlacementSameNode, PodNodes{App: []string{"n1"}}, 4, "no node recorded for the app (1) or the load (0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PlacementProblem(tc.p, tc.pn, tc.nodes)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("PlacementProblem = %q, want %q", got, tc.want)
			}
		})
	}
}
