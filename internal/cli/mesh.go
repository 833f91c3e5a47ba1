package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
)

// newMeshCmd is `meshbench mesh`: what --install-mesh did, undone.
func newMeshCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mesh",
		Short: "Manage the meshes meshbench installs on a cluster (uninstall)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newMeshUninstallCmd(env))
	return cmd
}

func newMeshUninstallCmd(env *Env) *cobra.Command {
	var (
		platform, meshes string
		k                kubeFlags
		timeout          time.Duration
		asJSON           bool
	)
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove Istio or Linkerd and what meshbench's --install-mesh added to the cluster",
		Long: `Remove a mesh from a cluster as --install-mesh installed it, and what its
install leaves behind, so that the cluster is as it was. Istio (--mesh
sidecar, ambient or waypoint: one uninstall removes them all):

  1. the objects meshbench applied besides istioctl's (the upstream-Envoy
     overlay's EnvoyFilters), from the record its install keeps in
     istio-system/` + install.RecordName + `;
  2. istioctl uninstall --purge (the --istio-build's istioctl, else PATH's);
  3. the istio-system namespace, waited for until gone (istio-cni's pods
     take their plugin out of the nodes' CNI chains as they stop);
  4. the CRDs meshbench applied that the cluster did not have before its
     first install (the Gateway API's; never one that existed before);
  5. the istio-ca-root-cert and istio-ca-crl ConfigMaps istiod copied into
     every namespace.

Linkerd (--mesh linkerd), as ` + "`linkerd uninstall | kubectl delete -f -`" + `
(the --linkerd-build's linkerd, else PATH's; it refuses while meshed pods
run, and then nothing is deleted): its webhook configurations first, the
other objects it lists, the linkerd namespace (waited for until gone),
then its CRDs and those the record in linkerd/` + install.RecordName + `
says meshbench applied, but never one the cluster had before.

Without a record (a mesh installed by other means) no CRD is deleted.
Every step is printed; exit 1 when one failed.`,
		Example: `  meshbench mesh uninstall --platform kube --mesh ambient --kubeconfig ~/.kube/k3d.yaml
  meshbench mesh uninstall --mesh sidecar --istio-build ~/.cache/meshbench/istio/1.31-alpha.eed52ebb66ad
  meshbench mesh uninstall --mesh linkerd,ambient --linkerd-build ~/.cache/meshbench/linkerd/edge-26.8.3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if platform != "kube" {
				return usagef("--platform %q: allowed: kube (the lab removes what it starts itself)", platform)
			}
			// The CLIs whose meshes go, in the order asked.
			var clis []string
			for _, m := range strings.Split(meshes, ",") {
				if m = strings.TrimSpace(m); m == "" {
					continue
				}
				cli := install.MeshCLI(m)
				if _, ok := mesh.Get(m); !ok || cli == "" {
					return usagef("--mesh %q: allowed: %s (Istio's modes: one uninstall removes them all)", m, strings.Join(uninstallModes(), ", "))
				}
				if !slices.Contains(clis, cli) {
					clis = append(clis, cli)
				}
			}
			if len(clis) == 0 {
				return usagef("--mesh: required, one or more of %s", strings.Join(uninstallModes(), ", "))
			}
			if timeout <= 0 {
				return usagef("--timeout %s: allowed: a positive duration", timeout)
			}
			o := install.UninstallOptions{Kubeconfig: k.kubeconfig, Context: k.context, Timeout: timeout}
			bins := map[string]string{}
			if k.istioBuild != "" {
				b, err := istio.Open(k.istioBuild)
				if err != nil {
					return usagef("--istio-build: %v", err)
				}
				bins["istioctl"] = b.Path("istioctl")
			}
			if k.linkerdBuild != "" {
				b, err := release.Open(k.linkerdBuild)
				if err != nil {
					return usagef("--linkerd-build: %v", err)
				}
				bins["linkerd"] = b.Path(release.CLI)
			}
			if !asJSON {
				o.Log = env.Stdout
			}
			c, err := kube.Connect(cmd.Context(), k.connect())
			if err != nil {
				return err
			}
			var steps []install.Step
			var errs []error
			for _, cli := range clis {
				o.CLI = bins[cli]
				uninstall := install.UninstallIstio
				if cli == "linkerd" {
					uninstall = install.UninstallLinkerd
				}
				s, err := uninstall(cmd.Context(), c.Client, o)
				steps, errs = append(steps, s...), append(errs, err)
			}
			err = errors.Join(errs...)
			if asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				if jerr := enc.Encode(steps); jerr != nil && err == nil {
					err = jerr
				}
			}
			if err != nil && cmd.Context().Err() == nil {
				return fmt.Errorf("uninstall incomplete: %w", err)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&platform, "platform", "kube", "platform: kube")
	cmd.Flags().StringVar(&meshes, "mesh", "", "the installed mesh mode(s) to remove: "+strings.Join(uninstallModes(), ", "))
	cmd.Flags().StringVar(&k.istioBuild, "istio-build", "", "the Istio build whose istioctl installed the mesh (as run --istio-build; default: istioctl on PATH)")
	cmd.Flags().StringVar(&k.linkerdBuild, "linkerd-build", "", "the Linkerd build whose linkerd installed the mesh (as run --linkerd-build; default: linkerd on PATH)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for istio-system to be gone")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the steps as JSON")
	k.add(cmd, kubeConnect)
	return cmd
}

// uninstallModes are the kube modes a CLI installs (every mode but none).
func uninstallModes() []string {
	var out []string
	for _, m := range mesh.Names(false) {
		if install.MeshCLI(m) != "" {
			out = append(out, m)
		}
	}
	return out
}
