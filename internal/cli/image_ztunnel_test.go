package cli

import (
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
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

// TestImageLinkerdProxy: `meshbench image linkerd-proxy --from REF`
// installs the linkerd2-proxy of an image served by an in-process
// registry (none is reachable here; the image holds the real proxy at
// Linkerd's path) with its provenance; an image without the proxy is
// refused and installs nothing.
func TestImageLinkerdProxy(t *testing.T) {
	bin, err := proxy.Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	push := func(repo string, files ...image.File) name.Reference {
		img, err := image.BuildRootfs(image.Rootfs{Files: files})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(u.Host+"/"+repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	ref := push("linkerd/proxy:edge-26.8.3", image.File{Path: "/" + proxy.ImagePath, Source: bin, Mode: 0o755})
	out := filepath.Join(t.TempDir(), "linkerd2-proxy")
	inv := runCLI(t, nil, "image", "linkerd-proxy", "--from", ref.String(), "--out", out)
	if inv.code != 0 || !strings.Contains(inv.stdout, "linkerd2-proxy installed in "+out+" from "+ref.String()+"@sha256:") ||
		!strings.Contains(inv.stdout, "linkerd2-proxy ") {
		t.Fatalf("exit %d\n%s%s", inv.code, inv.stdout, inv.stderr)
	}
	want, _ := proxy.FileSHA256(bin)
	if got, _ := proxy.FileSHA256(out); got != want {
		t.Errorf("installed sha256 %s, want %s", got, want)
	}
	prov, err := os.ReadFile(out + ".json")
	if err != nil || !strings.Contains(string(prov), `"path": "/usr/lib/linkerd/linkerd2-proxy"`) || !strings.Contains(string(prov), want) {
		t.Errorf("provenance %s (%v)", prov, err)
	}
	other := push("linkerd/proxy:empty", image.File{Path: "/usr/bin/other", Source: bin, Mode: 0o755})
	none := filepath.Join(t.TempDir(), "linkerd2-proxy")
	inv = runCLI(t, nil, "image", "linkerd-proxy", "--from", other.String(), "--out", none)
	if inv.code == 0 || !strings.Contains(inv.stderr, "has no /usr/lib/linkerd/linkerd2-proxy: not a linkerd2-proxy image") {
		t.Errorf("image without the proxy: exit %d %s", inv.code, inv.stderr)
	}
	if _, err := os.Stat(none); err == nil {
		t.Error("a binary was installed from an image without the proxy")
	}
}
