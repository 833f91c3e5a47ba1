package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// DoctorCheck is one row of `meshbench doctor`: the check, its status
// ("ok", "warn" or "FAIL") and what it found.
type DoctorCheck struct {
	Name, Status, Detail string
}

// DoctorTable prints doctor's table (CHECK, STATUS, DETAIL) and returns
// how many checks failed.
func DoctorTable(w io.Writer, checks []DoctorCheck) (failed int, err error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, c := range checks {
		if c.Status == "FAIL" {
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Status, c.Detail)
	}
	return failed, tw.Flush()
}
