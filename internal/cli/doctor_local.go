package cli

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/meshbench/meshbench/internal/platform/netlab"
)

// doctorLocal prints the local lab's preflight table (netlab.Doctor);
// it fails when a check fails (warnings do not).
func doctorLocal(ctx context.Context, env *Env, ztunnelFlag string) error {
	wd, _ := os.Getwd()
	checks := netlab.Doctor(ctx, ztunnelFlag, wd)
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	failed := 0
	for _, c := range checks {
		st := "ok"
		switch {
		case c.OK:
		case c.Warn:
			st = "warn"
		default:
			st = "FAIL"
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, st, c.Detail)
	}
	_ = tw.Flush()
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(checks))
	}
	return nil
}
