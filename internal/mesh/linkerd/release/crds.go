package release

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh/manifest"
)

// CRDs are Linkerd's CustomResourceDefinitions as its own install
// renders them: the build's `linkerd install --crds`, offline
// (--ignore-cluster, no kubeconfig), without the Gateway API bundle (the
// policy controller skips those watches when the kinds are absent).
func CRDs(ctx context.Context, b Build) ([]runtime.Object, error) {
	cmd := exec.CommandContext(ctx, b.Path(CLI), "install", "--crds", "--ignore-cluster")
	cmd.Env = []string{"KUBECONFIG=/nonexistent", "HOME=/nonexistent", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("linkerd install --crds: %w: %s", err, msg)
	}
	objs, err := manifest.Decode(out)
	if err != nil {
		return nil, fmt.Errorf("linkerd install --crds: %w", err)
	}
	var crds []runtime.Object
	for _, o := range objs {
		if u := o.(*unstructured.Unstructured); u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
		}
	}
	if len(crds) == 0 {
		return nil, errors.New("linkerd install --crds printed no CustomResourceDefinition")
	}
	return crds, nil
}
