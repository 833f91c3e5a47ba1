package release

import (
	"archive/tar"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/sys/image"
	"github.com/meshbench/meshbench/internal/sys/toolbin"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// build is the build make linkerd-tools installed (skipped, or failed
// under make test, without it).
func build(t *testing.T) Build {
	t.Helper()
	b, err := Open(DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	return b
}

// TestOpen: a directory is a build only with the release's stamp, every
// binary executable and the provenance; each error says what is missing
// and how to make it.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "no Linkerd build in "+dir) || !strings.Contains(err.Error(), "make linkerd-tools") {
		t.Errorf("empty dir: %v", err)
	}
	write := func(name, data string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(stampFile, "linkerd=edge-26.8.2\n", 0o644)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), `is "linkerd=edge-26.8.2", want "linkerd=edge-26.8.3"`) {
		t.Errorf("another release: %v", err)
	}
	write(stampFile, "linkerd="+Version+"\n", 0o644)
	for _, b := range Binaries {
		write(b, "#!/bin/sh\n", 0o755)
	}
	if err := os.Chmod(filepath.Join(dir, ProxyInit), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "lacks the executable "+ProxyInit) {
		t.Errorf("a binary not executable: %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, ProxyInit), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), ProvenanceFile) {
		t.Errorf("no provenance: %v", err)
	}
	write(ProvenanceFile, `{"release":"edge-26.8.3","source":"prebuilt","binaries":{}}`, 0o644)
	if b, err := Open(dir); err != nil || b.Provenance.Source != "prebuilt" {
		t.Errorf("complete: %v %+v", err, b)
	}
}

// TestInstallBuild checks the installed build against what the install
// script pinned: every binary's sha256 is the provenance's, the CLI and
// the controller report the release.
func TestInstallBuild(t *testing.T) {
	b := build(t)
	for _, f := range Binaries {
		sum, err := toolbin.FileSHA256(b.Path(f))
		if err != nil {
			t.Fatal(err)
		}
		if p := b.Provenance.Binaries[f]; p.SHA256 != sum || p.From == "" {
			t.Errorf("%s: sha256 %s, provenance %+v", f, sum, p)
		}
	}
	out, err := exec.Command(b.Path(CLI), "version", "--client", "--short").Output()
	if err != nil || strings.TrimSpace(string(out)) != Version {
		t.Errorf("linkerd version: %q %v", out, err)
	}
	out, _ = exec.Command(b.Path(Controller), "identity", "-version").CombinedOutput()
	if !strings.Contains(string(out), Version) {
		t.Errorf("controller identity -version: %q", out)
	}
}

// TestMakeCertsInstallOffline: the real `linkerd install` (offline, no
// cluster) takes the trust anchor and issuer MakeCerts made and the
// images InstallArgs names, and renders the control plane with them: the
// issuer in linkerd-identity-issuer, the anchor in the trust roots, every
// container's image meshbench's. ReadCerts accepts them, and refuses a
// directory whose issuer another anchor signed.
func TestMakeCertsInstallOffline(t *testing.T) {
	b := build(t)
	c, err := MakeCerts(filepath.Join(t.TempDir(), "certs"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(c.Path(IssuerKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("issuer key: %v %v; want mode 0600", st, err)
	}
	if _, err := ReadCerts(c.Dir); err != nil {
		t.Errorf("ReadCerts of MakeCerts': %v", err)
	}
	args := append([]string{"install", "--ignore-cluster"}, InstallArgs("", "", c)...)
	cmd := exec.Command(b.Path(CLI), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("linkerd install: %v: %s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	anchor, _ := os.ReadFile(c.Path(TrustAnchorFile))
	issuer, _ := os.ReadFile(c.Path(IssuerCertFile))
	anchorLine := strings.Split(string(anchor), "\n")[1] // the PEM's first base64 line
	var images []string
	var sawIssuer, sawAnchor bool
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil || o == nil {
			continue
		}
		meta, _ := o["metadata"].(map[string]any)
		if meta["name"] == "linkerd-identity-trust-roots" && strings.Contains(doc, anchorLine) {
			sawAnchor = true
		}
		if data, _ := o["data"].(map[string]any); meta["name"] == "linkerd-identity-issuer" {
			crt, _ := data["crt.pem"].(string)
			pem, err := base64.StdEncoding.DecodeString(crt)
			sawIssuer = err == nil && strings.TrimSpace(string(pem)) == strings.TrimSpace(string(issuer))
		}
		for _, l := range strings.Split(doc, "\n") {
			if i := strings.Index(l, "image: "); i >= 0 && !strings.Contains(l, "{{") {
				if im := strings.TrimSpace(l[i+len("image: "):]); !slices.Contains(images, im) {
					images = append(images, im)
				}
			}
		}
	}
	slices.Sort(images)
	want := []string{DefaultHub + "/controller:" + Version, DefaultHub + "/proxy:" + Version}
	if !slices.Equal(images, want) || !sawIssuer || !sawAnchor {
		t.Errorf("rendered images %v (want %v), issuer Secret %v, trust anchor %v", images, want, sawIssuer, sawAnchor)
	}
	// An issuer of another anchor: refused.
	other, err := MakeCerts(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other.Path(TrustAnchorFile), c.Path(TrustAnchorFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCerts(c.Dir); err == nil || !strings.Contains(err.Error(), "does not verify against") {
		t.Errorf("mismatched anchor: %v", err)
	}
	if _, err := ReadCerts(t.TempDir()); err == nil || !strings.Contains(err.Error(), TrustAnchorFile) {
		t.Errorf("empty dir: %v", err)
	}
}

// files lists an image's single layer: path -> header.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimSuffix(h.Name, "/")] = h
	}
}

// TestImages: the two images as Linkerd's Dockerfiles lay them out, with
// the libraries the glibc-linked binaries load and Debian's iptables under
// the names proxy-init runs; the same build gives the same digests.
func TestImages(t *testing.T) {
	b := build(t)
	imgs, err := Images(b, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 || imgs[0].Ref.Name() != DefaultHub+"/controller:"+Version || imgs[1].Ref.Name() != DefaultHub+"/proxy:"+Version {
		t.Fatalf("images %v", imgs)
	}
	for _, tc := range []struct {
		img        Image
		entrypoint string
		user       string
		have       []string
	}{
		{imgs[0], "/controller", "", []string{"/controller", "/linkerd-policy-controller", "/lib64/ld-linux-x86-64.so.2"}},
		{imgs[1], "/usr/lib/linkerd/linkerd2-proxy-identity", "65534", []string{"/usr/lib/linkerd/linkerd2-proxy",
			"/usr/lib/linkerd/linkerd2-proxy-init", "/usr/sbin/iptables-nft", "/usr/sbin/iptables-nft-save", "/usr/sbin/iptables-legacy", "/tmp"}},
	} {
		cf, err := tc.img.Image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{tc.entrypoint}) || cf.Config.User != tc.user ||
			!slices.Contains(cf.Config.Env, "LINKERD_CONTAINER_VERSION_OVERRIDE="+Version) {
			t.Errorf("%s: entrypoint %v, user %q, env %v", tc.img.Name, cf.Config.Entrypoint, cf.Config.User, cf.Config.Env)
		}
		fs := files(t, tc.img.Image)
		for _, p := range tc.have {
			if fs[p] == nil {
				t.Errorf("%s lacks %s", tc.img.Name, p)
			}
		}
	}
	again, err := Images(b, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range imgs {
		d1, _ := imgs[i].Image.Digest()
		d2, _ := again[i].Image.Digest()
		if d1 != d2 {
			t.Errorf("%s: digests %s and %s from the same build", imgs[i].Name, d1, d2)
		}
	}
}

// TestFromImages fills a build from images in Linkerd's official layout
// served by an in-process registry (go-containerregistry's pkg/registry:
// no registry is reachable here), made of the real binaries at upstream's
// paths: the build opens, every binary is the one in its image, and the
// provenance names each image's digest. A CLI of another release and an
// image without a binary are refused.
func TestFromImages(t *testing.T) {
	b := build(t)
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	hub := u.Host + "/linkerd"
	push := func(repo string, fs ...image.File) string {
		t.Helper()
		img, err := image.BuildRootfs(image.Rootfs{Files: fs})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(hub+"/"+repo+":"+Version, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return d.String()
	}
	ctrl := push(ImageController, image.File{Path: "/controller", Source: b.Path(Controller), Mode: 0o755},
		image.File{Path: "/linkerd-policy-controller", Source: b.Path(PolicyController), Mode: 0o755})
	push(ImageProxy, image.File{Path: "/usr/lib/linkerd/linkerd2-proxy", Source: b.Path(Proxy), Mode: 0o755},
		image.File{Path: "/usr/lib/linkerd/linkerd2-proxy-identity", Source: b.Path(ProxyIdentity), Mode: 0o755},
		image.File{Path: "/usr/lib/linkerd/linkerd2-proxy-init", Source: b.Path(ProxyInit), Mode: 0o755})
	dir := t.TempDir()
	got, err := FromImages(context.Background(), dir, hub, b.Path(CLI))
	if err != nil {
		t.Fatal(err)
	}
	if got.Provenance.Source != "images" || !strings.Contains(got.Provenance.Binaries[PolicyController].From, "@"+ctrl+":/linkerd-policy-controller") {
		t.Errorf("provenance %+v", got.Provenance)
	}
	for _, f := range Binaries {
		if got.Provenance.Binaries[f].SHA256 != b.Provenance.Binaries[f].SHA256 {
			t.Errorf("%s: %s, want the image's %s", f, got.Provenance.Binaries[f].SHA256, b.Provenance.Binaries[f].SHA256)
		}
	}
	// A CLI of another release.
	fake := filepath.Join(t.TempDir(), "linkerd")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho edge-25.1.1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := FromImages(context.Background(), t.TempDir(), hub, fake); err == nil || !strings.Contains(err.Error(), "want "+Version) {
		t.Errorf("another CLI: %v", err)
	}
	// A proxy image without proxy-init.
	push(ImageProxy, image.File{Path: "/usr/lib/linkerd/linkerd2-proxy", Source: b.Path(Proxy), Mode: 0o755})
	if _, err := FromImages(context.Background(), t.TempDir(), hub, b.Path(CLI)); err == nil || !strings.Contains(err.Error(), "/usr/lib/linkerd/linkerd2-proxy-init") {
		t.Errorf("incomplete image: %v", err)
	}
}

// TestCRDs: the build's CLI renders Linkerd's CRDs offline: the
// policy.linkerd.io kinds the lab's policies need, ServiceProfile, and
// nothing else.
func TestCRDs(t *testing.T) {
	b := build(t)
	crds, err := CRDs(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, o := range crds {
		u := o.(*unstructured.Unstructured)
		if u.GetKind() != "CustomResourceDefinition" {
			t.Errorf("%s %s is no CRD", u.GetKind(), u.GetName())
		}
		names[u.GetName()] = true
	}
	for _, want := range []string{"servers.policy.linkerd.io", "authorizationpolicies.policy.linkerd.io",
		"meshtlsauthentications.policy.linkerd.io", "serviceprofiles.linkerd.io"} {
		if !names[want] {
			t.Errorf("no CRD %s in %v", want, names)
		}
	}
}
