// Package install installs (and removes) a mesh on a cluster as a
// user would: the mesh's own CLI (istioctl, linkerd) with the commands
// package mesh names, the output of those that print manifests applied,
// every command kept with its output for the results. MeshInstall changes
// Istio's install for Istio built here (package istio makes it). It sits
// below platform/kube: it needs only something that applies objects.
package install

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/manifest"
)

// Command is one command meshbench runs (or would run) to install a mesh,
// kept in the results with its output.
type Command struct {
	Args []string `json:"args"`
	// ApplyOutput: the command prints manifests that meshbench applies
	// itself (what `CMD | kubectl apply -f -` does), instead of running
	// them through kubectl.
	ApplyOutput bool `json:"apply_output,omitempty"`
	// ControlPlane marks the command that installs the control plane
	// (mesh.Command.ControlPlane): a MeshInstall adds its arguments there.
	ControlPlane bool `json:"control_plane,omitempty"`
	// NoGatewayAPI are arguments WithGatewayAPI adds when the cluster has
	// no Gateway API (mesh.Command.NoGatewayAPI).
	NoGatewayAPI []string `json:"-"`
	Output       string   `json:"output,omitempty"`
	// Applied lists the objects meshbench applied from the command's
	// output, one "group/version/Kind namespace/name" each.
	Applied []string `json:"applied,omitempty"`
	Err     string   `json:"error,omitempty"`
	Seconds float64  `json:"seconds,omitempty"`
}

// String is the command as a user would type it.
func (c Command) String() string {
	s := shellJoin(c.Args)
	if c.ApplyOutput {
		s += " | kubectl apply -f -"
	}
	return s
}

func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$|&;<>()*?[]{}\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// MeshCLI is the CLI that installs mode's mesh ("" for none or an
// unknown mode).
func MeshCLI(mode string) string {
	if m, ok := mesh.Get(mode); ok {
		return m.Cluster.CLI
	}
	return ""
}

// InstallCommands are the commands that install mode's mesh with mTLS
// strict where the mesh has the choice (meshbench's PeerAuthentication
// and Linkerd's all-authenticated default policy do the rest), for the
// cluster of kubeconfig/context (either may be empty: the CLI's defaults).
func InstallCommands(mode, kubeconfig, context string) []Command {
	m, ok := mesh.Get(mode)
	if !ok {
		return nil
	}
	conn := connArgs(kubeconfig, context)
	var out []Command
	for _, c := range m.Cluster.Install {
		out = append(out, Command{Args: append(slices.Clone(c.Args), conn...), ApplyOutput: c.ApplyOutput,
			ControlPlane: c.ControlPlane, NoGatewayAPI: slices.Clone(c.NoGatewayAPI)})
	}
	return out
}

// WithGatewayAPI adds to cmds the arguments they take when the cluster,
// whose CRDs are crds, has no Gateway API (mesh.GatewayAPICRD missing):
// Linkerd then installs its own bundle of the Gateway API CRDs.
func WithGatewayAPI(cmds []Command, crds []string) []Command {
	if slices.Contains(crds, mesh.GatewayAPICRD) {
		return cmds
	}
	out := make([]Command, len(cmds))
	for i, c := range cmds {
		if len(c.NoGatewayAPI) > 0 {
			c.Args = append(slices.Clone(c.Args), c.NoGatewayAPI...)
		}
		out[i] = c
	}
	return out
}

// AfterControlPlane are the commands of cmds after the one that installs
// the control plane (the check), for a mesh installed already.
func AfterControlPlane(cmds []Command) []Command {
	for i, c := range cmds {
		if c.ControlPlane {
			return cmds[i+1:]
		}
	}
	return nil
}

// connArgs are istioctl's and linkerd's flags for the cluster.
func connArgs(kubeconfig, context string) []string {
	var conn []string
	if kubeconfig != "" {
		conn = append(conn, "--kubeconfig", kubeconfig)
	}
	if context != "" {
		conn = append(conn, "--context", context)
	}
	return conn
}

// VersionCommand prints the version of mode's CLI.
func VersionCommand(mode string) []string {
	if m, ok := mesh.Get(mode); ok {
		return slices.Clone(m.Cluster.VersionArgs)
	}
	return nil
}

// CLIVersion runs mode's CLI for its version; "" and an error naming the
// CLI when it is not on PATH or fails.
func CLIVersion(ctx context.Context, mode string) (string, error) {
	return CLIVersionAt(ctx, mode, "")
}

// CLIVersionAt is CLIVersion running bin ("": the CLI on PATH).
func CLIVersionAt(ctx context.Context, mode, bin string) (string, error) {
	args := VersionCommand(mode)
	if args == nil {
		return "", nil
	}
	if bin != "" {
		args[0] = bin
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return "", fmt.Errorf("%s not found on PATH (needed to install the %s mesh; or install the mesh yourself and pass --install-mesh=false)", args[0], mode)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, path, args[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", shellJoin(args), err, oneLine(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Applier applies objects to a cluster (client.Client does, with
// server-side apply).
type Applier interface {
	Apply(ctx context.Context, objs []runtime.Object) error
}

// Run runs cmds against the cluster, applying with a the output of
// those that print manifests. It returns every command with its output,
// also when one fails (the failing one last).
func Run(ctx context.Context, a Applier, cmds []Command, log io.Writer) ([]Command, error) {
	var done []Command
	for _, cmd := range cmds {
		if log != nil {
			fmt.Fprintf(log, "$ %s\n", cmd)
		}
		start := time.Now()
		var stdout, stderr bytes.Buffer
		x := exec.CommandContext(ctx, cmd.Args[0], cmd.Args[1:]...)
		x.Stdout, x.Stderr = &stdout, &stderr
		err := x.Run()
		cmd.Seconds = time.Since(start).Seconds()
		if cmd.ApplyOutput {
			cmd.Output = stderr.String()
			if err == nil {
				objs, derr := manifest.Decode(stdout.Bytes())
				if derr == nil {
					derr = a.Apply(ctx, objs)
				}
				if derr == nil {
					cmd.Applied, derr = ObjectLines(objs)
				}
				err = derr
			}
		} else {
			cmd.Output = stdout.String() + stderr.String()
		}
		if log != nil && !cmd.ApplyOutput && strings.TrimSpace(cmd.Output) != "" {
			// What the CLI says (istioctl's progress, `linkerd check`'s
			// table), as a user sees it.
			fmt.Fprintf(log, "  %s\n", strings.ReplaceAll(strings.TrimRight(cmd.Output, "\n"), "\n", "\n  "))
		}
		if err != nil {
			cmd.Err = err.Error()
			done = append(done, cmd)
			return done, fmt.Errorf("%s: %v: %s", cmd, err, oneLine(cmd.Output))
		}
		done = append(done, cmd)
	}
	return done, nil
}
