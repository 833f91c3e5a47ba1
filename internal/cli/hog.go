package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/sys/cgroup"
	"github.com/meshbench/meshbench/internal/workload"
)

// newHogCmd is the hidden `meshbench hog`: the CPU hog of the
// noisy-neighbour fault on a cluster, run in a pod of meshbench's image
// (which has no shell) whose CPU limit is the fault's millicores
// (platform/kube). It stops after --for or on SIGINT/SIGTERM (the pod's
// delete) and prints what it did, also to --report (the pod's
// termination message file), so the fault's record holds it.
func newHogCmd(env *Env) *cobra.Command {
	var millicores int
	var length time.Duration
	var report string
	cmd := &cobra.Command{
		Use:    "hog",
		Short:  "Keep CPUs busy for a while (the noisy-neighbour fault's pod on a cluster)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if millicores < cgroup.MinMillicores || millicores > fault.MaxMillicores {
				return usagef("--millicores %d: allowed: %d to %d", millicores, cgroup.MinMillicores, fault.MaxMillicores)
			}
			if length <= 0 || length > workload.MaxHogFor {
				return usagef("--for %s: allowed: above 0s, at most %s", length, workload.MaxHogFor)
			}
			line := "hog: " + workload.Hog(cmd.Context(), millicores, length).String()
			fmt.Fprintln(env.Stdout, line)
			if report != "" {
				if err := os.WriteFile(report, []byte(line+"\n"), 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&millicores, "millicores", 0, "the CPU it is meant to use: one busy thread per started core (its cgroup's limit bounds it)")
	fl.DurationVar(&length, "for", 0, "how long it stays busy at most")
	fl.StringVar(&report, "report", "", "also write its line to this file (a pod's termination message)")
	return cmd
}
