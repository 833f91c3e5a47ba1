package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
)

// TestIstiodCheck: the doctor's row for --control-plane istiod warns,
// naming what is missing, without an Istio build or without the netns
// substrate, and is ok where all is in place.
func TestIstiodCheck(t *testing.T) {
	t.Setenv(istio.EnvBuild, t.TempDir())
	if c := istiodCheck(nil); c.Status != "warn" || !strings.Contains(c.Detail, "no Istio build in") {
		t.Errorf("without a build: %+v", c)
	}
	t.Setenv(istio.EnvBuild, "")
	if _, err := istio.Open(istio.DefaultDir()); err != nil {
		t.Skip(err)
	}
	if _, _, err := labapi.Check(); err != nil {
		t.Skip(err)
	}
	if c := istiodCheck(errors.New("no root")); c.Status != "warn" || !strings.Contains(c.Detail, "runs only on the netns substrate") {
		t.Errorf("without the netns substrate: %+v", c)
	}
	if c := istiodCheck(nil); c.Status != "ok" || !strings.Contains(c.Detail, istio.Version) {
		t.Errorf("with everything in place: %+v", c)
	}
}

// TestLinkerdControllersCheck: the doctor's row for --control-plane
// linkerd warns, naming what is missing, without Linkerd's build or
// without the netns substrate, and is ok where all is in place.
func TestLinkerdControllersCheck(t *testing.T) {
	t.Setenv(release.EnvBuild, t.TempDir())
	if c := linkerdControllersCheck(nil); c.Status != "warn" || !strings.Contains(c.Detail, "no Linkerd build in") {
		t.Errorf("without a build: %+v", c)
	}
	t.Setenv(release.EnvBuild, "")
	if _, err := release.Open(release.DefaultDir()); err != nil {
		t.Skip(err)
	}
	if _, _, err := labapi.Check(); err != nil {
		t.Skip(err)
	}
	if c := linkerdControllersCheck(errors.New("no root")); c.Status != "warn" || !strings.Contains(c.Detail, "runs only on the netns substrate") {
		t.Errorf("without the netns substrate: %+v", c)
	}
	if c := linkerdControllersCheck(nil); c.Status != "ok" || !strings.Contains(c.Detail, release.Version) {
		t.Errorf("with everything in place: %+v", c)
	}
}
