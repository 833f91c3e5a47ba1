package cli

import (
	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/mesh/linkerd"
)

// newLinkerdControlPlaneCmd is the hidden `meshbench linkerd-control-plane`:
// the lab's stand-in for Linkerd's control plane in a process of its own,
// started by mode linkerd (internal/mesh/linkerd) with its listeners inherited,
// so its CPU and memory are sampled apart from meshbench's.
func newLinkerdControlPlaneCmd(env *Env) *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:    linkerd.ControlPlaneCommand,
		Short:  "Serve the lab's stand-in for Linkerd's control plane (started by run/bench --mesh linkerd)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" {
				return usagef("--config: required (the JSON file run/bench --mesh linkerd writes)")
			}
			return linkerd.ServeControlPlane(cmd.Context(), config, env.Stdout)
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the control plane's configuration (JSON)")
	return cmd
}
