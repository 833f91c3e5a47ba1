package report

import (
	"fmt"
	"io"
	"sort"
)

// DerivedTable prints a run's derived figures (the manifest's "derived":
// per 1000 achieved rps, per replica, data plane / app), one a line in
// key order, under "Derived:" after a blank line; nothing when there are
// none.
func DerivedTable(w io.Writer, derived map[string]float64) {
	if len(derived) == 0 {
		return
	}
	fmt.Fprintln(w, "\nDerived:")
	keys := make([]string, 0, len(derived))
	for k := range derived {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-45s %.2f\n", k, derived[k])
	}
}
