package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/istio"
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
		Short: "Remove Istio and what meshbench's --install-mesh added to the cluster",
		Long: `Remove Istio from a cluster as --install-mesh installed it, and what its
install leaves behind, so that the cluster is as it was:

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

Without the record (Istio installed by other means) steps 2, 3 and 5 run
and no CRD is deleted. Every step is printed; exit 1 when one failed.`,
		Example: `  meshbench mesh uninstall --platform kube --mesh ambient --kubeconfig ~/.kube/k3d.yaml
  meshbench mesh uninstall --mesh sidecar --istio-build ~/.cache/meshbench/istio/1.31-alpha.eed52ebb66ad`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if platform != "kube" {
				return usagef("--platform %q: allowed: kube (the lab removes what it starts itself)", platform)
			}
			var modes []string
			for _, m := range strings.Split(meshes, ",") {
				if m = strings.TrimSpace(m); m == "" {
					continue
				}
				if _, ok := mesh.Get(m); !ok || install.MeshCLI(m) != "istioctl" {
					return usagef("--mesh %q: allowed: %s (Istio's modes; one uninstall removes them all)", m, strings.Join(istioModes(), ", "))
				}
				modes = append(modes, m)
			}
			if len(modes) == 0 {
				return usagef("--mesh: required, one of %s", strings.Join(istioModes(), ", "))
			}
			if timeout <= 0 {
				return usagef("--timeout %s: allowed: a positive duration", timeout)
			}
			o := install.UninstallOptions{Kubeconfig: k.kubeconfig, Context: k.context, Timeout: timeout}
			if k.istioBuild != "" {
				b, err := istio.Open(k.istioBuild)
				if err != nil {
					return usagef("--istio-build: %v", err)
				}
				o.Istioctl = b.Path("istioctl")
			}
			if !asJSON {
				o.Log = env.Stdout
			}
			c, err := kube.Connect(cmd.Context(), k.connect())
			if err != nil {
				return err
			}
			steps, err := install.UninstallIstio(cmd.Context(), c.Client, o)
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
	cmd.Flags().StringVar(&meshes, "mesh", "", "the installed mesh mode(s) to remove: "+strings.Join(istioModes(), ", "))
	cmd.Flags().StringVar(&k.istioBuild, "istio-build", "", "the Istio build whose istioctl installed the mesh (as run --istio-build; default: istioctl on PATH)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for istio-system to be gone")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the steps as JSON")
	k.add(cmd, kubeConnect)
	return cmd
}

// istioModes are the kube modes istioctl installs.
func istioModes() []string {
	var out []string
	for _, m := range mesh.Names(false) {
		if install.MeshCLI(m) == "istioctl" {
			out = append(out, m)
		}
	}
	return out
}
