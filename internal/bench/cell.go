package bench

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/local"
)

// Cell is one `meshbench run` cell on the local lab: its options (the
// substrate and Envoy left to RunCell) and how to find them.
type Cell struct {
	Options local.Options
	// Substrate is --substrate (auto, netns, loopback); ZtunnelFlag,
	// LinkerdProxyFlag and EnvoyFlag the binaries given ("": found as usual).
	Substrate                                string
	ZtunnelFlag, LinkerdProxyFlag, EnvoyFlag string
	// ControlPlane is --control-plane: who configures the sidecars (lab,
	// istiod; "": lab).
	ControlPlane string
	// Getenv reads the environment; Stderr gets the substrate's fall-back
	// note.
	Getenv func(string) string
	Stderr io.Writer
}

// RunCell chooses c's substrate, finds Envoy when the cell runs one, and
// runs the cell on the local lab. The result is returned whenever the lab
// wrote one, with the error.
func RunCell(ctx context.Context, c Cell) (*local.Result, error) {
	o := c.Options
	sub, fellBack, err := ChooseSubstrate(c.Substrate, c.ZtunnelFlag, c.LinkerdProxyFlag, []topology.Options{o.Mesh})
	if err != nil {
		return nil, err
	}
	if fellBack != "" {
		fmt.Fprintln(c.Stderr, fellBack)
	}
	o.Substrate = sub
	envoyPath := ""
	if NeedsEnvoy(o.Mesh, sub) {
		bin, err := FindEnvoy(ctx, c.EnvoyFlag, c.Getenv)
		if err != nil {
			return nil, err
		}
		o.Envoy, envoyPath = bin, bin.Path
	}
	if err := UseControlPlane(sub, c.ControlPlane, []topology.Options{o.Mesh}, envoyPath, o.Hops); err != nil {
		return nil, err
	}
	if n := ControlPlaneNote(sub, c.ControlPlane, []topology.Mode{o.Mesh.Mode}); n != "" {
		fmt.Fprintln(c.Stderr, "meshbench run: "+n)
	}
	res, err := local.Run(ctx, o)
	var pe *local.PrecheckError
	if errors.As(err, &pe) {
		// Nothing was made: refused in one line, as bad input is.
		return res, &UsageError{Err: errors.New(oneLine(pe.Err))}
	}
	return res, err
}
