package report

import (
	"fmt"
	"io"

	"github.com/meshbench/meshbench/internal/analysis"
)

// CapacityCompareText prints the capacities of two search plans, B (in
// dirB) vs A (in dirA), at objective obj: a warning when they searched at
// different objectives, one verdict per configuration searched in both,
// then those searched in one only.
func CapacityCompareText(w io.Writer, sc *analysis.CapacitySetComparison, obj, dirA, dirB string) error {
	fmt.Fprintf(w, "Capacity at %s: B (%s) vs A (%s)\n", obj, dirB, dirA)
	if sc.Mismatch != "" {
		fmt.Fprintf(w, "WARNING: %s\n", sc.Mismatch)
	}
	for _, r := range sc.Rows {
		fmt.Fprintf(w, "  %s\n", r.Verdict)
	}
	for _, k := range sc.OnlyA {
		fmt.Fprintf(w, "  only in A: %s\n", k)
	}
	for _, k := range sc.OnlyB {
		fmt.Fprintf(w, "  only in B: %s\n", k)
	}
	return nil
}
