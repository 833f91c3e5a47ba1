package kube

import (
	"context"
	"fmt"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
)

// meshInstall is how mode's mesh is installed when the run installs it:
// IstioInstall for Istio's modes, LinkerdInstall for Linkerd's; nil for
// the mesh's CLI from PATH as it is.
func (o *Options) meshInstall(mode string) *install.MeshInstall {
	cli := install.MeshCLI(mode)
	for _, mi := range []*install.MeshInstall{o.IstioInstall, o.LinkerdInstall} {
		if mi != nil && cli != "" && mi.For == cli {
			return mi
		}
	}
	return nil
}

// installMesh installs the cell's mesh with its own CLI when the run
// installs it (Options.InstallMesh): the CLI's version in the manifest,
// the cluster's CRDs before (the record's, and whether the cluster has
// the Gateway API: install.WithGatewayAPI), the commands run and kept with
// their output and what they applied (k8s/mesh-install.json), the objects
// the install applies after them (k8s/mesh-install-objects.yaml), and the
// record in the mesh's namespace that `meshbench mesh uninstall` reads
// (install.WriteRecord). It records which proxy build the cell measures
// whenever a MeshInstall says.
func (r *run) installMesh(ctx context.Context) error {
	o, c := r.o, r.c
	mode := string(o.Spec.Mesh.Mode)
	mi := o.meshInstall(mode)
	if mi != nil && mi.Proxy != "" {
		r.manifest.Options["mesh_proxy"] = mi.Proxy
	}
	m, ok := mesh.Get(mode)
	if !o.InstallMesh || !ok || m.Kind == mesh.KindNone {
		return nil
	}
	if mi != nil && mi.Describe != "" {
		r.manifest.Options["mesh_install"] = mi.Describe
	}
	v, err := mi.CLIVersion(ctx, mode)
	if err != nil {
		return err
	}
	r.manifest.Options["mesh_cli_version"] = v
	// What the cluster had before, for the record (what `meshbench mesh
	// uninstall` removes) and the Gateway API's presence.
	crdsBefore, err := install.CRDNames(ctx, c.Client)
	if err != nil {
		return err
	}
	cmds := install.InstallCommands(mode, o.Connect.Kubeconfig, o.Connect.Context)
	cmds = install.WithGatewayAPI(mi.Commands(withIstioProfile(cmds, o.IstioProfile)), crdsBefore)
	installed, err := c.installedAlready(ctx, m)
	if err != nil {
		return err
	}
	if installed != "" {
		// Its CLI would refuse: check the install that is there.
		r.logf("%s is installed already (%s): its CLI does not install it again (meshbench mesh uninstall --mesh %s removes it); checking it", m.Product, installed, mode)
		r.manifest.Options["mesh_install"] = m.Product + " installed already (" + installed + "), checked only"
		cmds = install.AfterControlPlane(cmds)
	}
	done, err := c.Install(ctx, cmds, o.Log)
	_ = r.dir.WriteJSON(filepath.Join("k8s", "mesh-install.json"), done)
	var applied []string
	for _, d := range done {
		applied = append(applied, d.Applied...)
	}
	if err == nil && mi != nil && len(mi.Objects) > 0 {
		if err = r.writeObjects("mesh-install-objects.yaml", mi.Objects); err == nil {
			err = c.Apply(ctx, mi.Objects)
		}
		if err == nil {
			var lines []string
			lines, err = install.ObjectLines(mi.Objects)
			applied = append(applied, lines...)
		}
	}
	if err != nil || installed != "" {
		return err
	}
	return install.WriteRecord(ctx, c.Client, m.Cluster.Namespace, crdsBefore, applied)
}

// installedAlready names the ConfigMap that says m is installed on c
// (mesh.Cluster.InstalledConfigMap), "" when it is not there or m has
// none.
func (c *Cluster) installedAlready(ctx context.Context, m *mesh.Mesh) (string, error) {
	name := m.Cluster.InstalledConfigMap
	if name == "" {
		return "", nil
	}
	_, err := c.Core.CoreV1().ConfigMaps(m.Cluster.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("is %s installed? reading %s/%s: %w", m.Product, m.Cluster.Namespace, name, err)
	}
	return m.Cluster.Namespace + "/" + name, nil
}
