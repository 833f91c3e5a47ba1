package cli

import (
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/sys/image"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestImageZtunnel: `meshbench image ztunnel --from REF` installs the
// ztunnel of an image served by an in-process registry (none is reachable
// here; the image holds the real binary at Istio's path) and says where
// from; a malformed --digest is a usage error.
func TestImageZtunnel(t *testing.T) {
	testutil.RealPart(t, "ztunnel")
	bin, err := ztunnel.Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	img, err := image.BuildRootfs(image.Rootfs{Files: []image.File{{Path: "/usr/local/bin/ztunnel", Source: bin, Mode: 0o755}}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(u.Host+"/istio/ztunnel:1.24.6", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ztunnel")
	inv := runCLI(t, nil, "image", "ztunnel", "--from", ref.String(), "--out", out)
	if inv.code != 0 || !strings.Contains(inv.stdout, "ztunnel installed in "+out+" from "+ref.String()+"@sha256:") {
		t.Fatalf("exit %d\n%s%s", inv.code, inv.stdout, inv.stderr)
	}
	want, _ := ztunnel.FileSHA256(bin)
	if got, _ := ztunnel.FileSHA256(out); got != want {
		t.Errorf("installed sha256 %s, want %s", got, want)
	}
	inv = runCLI(t, nil, "image", "ztunnel", "--from", ref.String(), "--digest", "md5:1", "--out", out)
	if inv.code != ExitUsage || !strings.Contains(inv.stderr, `--digest "md5:1": allowed: sha256:`) {
		t.Errorf("bad digest: exit %d %s", inv.code, inv.stderr)
	}
}
