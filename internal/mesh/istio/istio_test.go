package istio

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// requireBuild is the Istio build of hack/istio/build.sh (make
// istio-tools); skipped without it, a failure under make test.
func requireBuild(t *testing.T) Build {
	t.Helper()
	b, err := Open(DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	return b
}

func requireEnvoy(t *testing.T) *envoy.Binary {
	t.Helper()
	bin, err := envoy.Find(envoy.FindOptions{ProjectDir: "../../.."})
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	return bin
}

// TestOpen: a complete build opens; a missing one, one of another version
// and one lacking a binary are refused naming the fix.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "hack/istio/build.sh") {
		t.Errorf("empty dir: %v; want the build command", err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(".versions", "istio=v0.0.0-20200101000000-000000000000 version=1.0\n")
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), Version) {
		t.Errorf("other version: %v; want the pinned one named", err)
	}
	write(".versions", "istio="+Pseudo+" version="+Version+"\n")
	for _, f := range append(slices.Clone(Binaries), BootstrapFile, GatewayCRDsFile) {
		write(f, "x")
	}
	if _, err := Open(dir); err != nil {
		t.Errorf("complete build: %v", err)
	}
	os.Remove(filepath.Join(dir, "istio-cni"))
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "lacks istio-cni") {
		t.Errorf("no istio-cni: %v", err)
	}
}

// TestUpstreamBootstrap: the real template loses exactly the
// metadata_discovery bootstrap extension; a template without it is an
// error (the removal must not silently do nothing).
func TestUpstreamBootstrap(t *testing.T) {
	b := requireBuild(t)
	tmpl, err := os.ReadFile(b.Path(BootstrapFile))
	if err != nil {
		t.Fatal(err)
	}
	got, err := UpstreamBootstrap(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(got, []byte(`"name": "metadata_discovery"`)) || bytes.Contains(got, []byte("istio.workload.BootstrapExtension")) {
		t.Error("metadata_discovery still in the template")
	}
	// The other use of the flag (a stats prefix) and the internal
	// listener extension stay.
	if n, m := bytes.Count(tmpl, []byte("{{- if .metadata_discovery }}")), bytes.Count(got, []byte("{{- if .metadata_discovery }}")); m != n-1 {
		t.Errorf("%d metadata_discovery conditions left of %d, want one fewer", m, n)
	}
	if !bytes.Contains(got, []byte("envoy.bootstrap.internal_listener")) || len(tmpl)-len(got) > 400 {
		t.Errorf("removed %d bytes; want only the extension's block", len(tmpl)-len(got))
	}
	for _, bad := range []string{`{"bootstrap_extensions": []}`, `"name": "metadata_discovery"`} {
		if _, err := UpstreamBootstrap([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// unpack extracts an image's files into dir.
func unpack(t *testing.T, rc io.ReadCloser, dir string) {
	t.Helper()
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, os.FileMode(h.Mode))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// inChroot runs argv in a chroot of dir and returns its output.
func inChroot(dir string, argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: dir}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestImagesRun: each image's programs run from the image's files alone
// (a chroot: no library or tool from the host), as the kubelet will run
// them: upstream Envoy and pilot-agent in proxyv2, istio-init's iptables
// (nft and legacy), pilot-discovery, install-cni with its plugin, ztunnel.
func TestImagesRun(t *testing.T) {
	testutil.RequireRoot(t, "running the images' binaries in a chroot needs root")
	b := requireBuild(t)
	env := requireEnvoy(t)
	zt, err := ztunnel.Find("", ".")
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	imgs, err := Images(b, ImageOptions{Envoy: env.Path, Ztunnel: zt})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, img := range imgs {
		names = append(names, img.Ref.Name())
	}
	want := []string{DefaultHub + "/pilot:" + Version, DefaultHub + "/proxyv2:" + Version, DefaultHub + "/install-cni:" + Version, DefaultHub + "/ztunnel:" + Version}
	if !slices.Equal(names, want) {
		t.Fatalf("images %v, want %v", names, want)
	}
	runs := map[string][][]string{
		"pilot": {{"/usr/local/bin/pilot-discovery", "version", "--short"}},
		"proxyv2": {
			{"/usr/local/bin/pilot-agent", "version", "--short"},
			{"/usr/local/bin/envoy", "--version"},
			{"/usr/sbin/iptables-nft-save", "--version"},
			{"/usr/sbin/ip6tables-legacy-restore", "--version"},
			{"/usr/sbin/iptables", "--version"},
		},
		"install-cni": {{"/usr/local/bin/install-cni", "--help"}, {"/usr/sbin/iptables-restore", "--version"}},
		"ztunnel":     {{"/usr/local/bin/ztunnel", "version"}},
	}
	wantOut := map[string]string{"pilot-discovery": Version, "pilot-agent": Version, "envoy": "/1.40.", "iptables-nft-save": "nf_tables",
		"ip6tables-legacy-restore": "legacy", "iptables": "nf_tables", "install-cni": "install-cni", "iptables-restore": "iptables", "ztunnel": "version"}
	for _, img := range imgs {
		dir := t.TempDir()
		unpack(t, mutate.Extract(img.Image), dir)
		for _, argv := range runs[img.Name] {
			out, err := inChroot(dir, argv...)
			if w := wantOut[filepath.Base(argv[0])]; err != nil || !strings.Contains(out, w) {
				t.Errorf("%s: %v: %v\n%s\nwant %q in the output", img.Name, argv, err, out, w)
			}
		}
		cf, err := img.Image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if img.Name == "proxyv2" {
			tmpl, err := os.ReadFile(filepath.Join(dir, "var/lib/istio/envoy/envoy_bootstrap_tmpl.json"))
			if err != nil || bytes.Contains(tmpl, []byte("istio.workload.BootstrapExtension")) {
				t.Errorf("proxyv2's bootstrap template: %v; want the upstream variant", err)
			}
			if cf.Config.Entrypoint[0] != "/usr/local/bin/pilot-agent" {
				t.Errorf("proxyv2 entrypoint %v", cf.Config.Entrypoint)
			}
		}
		if img.Name == "pilot" && cf.Config.User != "1337:1337" {
			t.Errorf("pilot runs as %q, want 1337:1337", cf.Config.User)
		}
		if img.Name == "install-cni" {
			if st, err := os.Stat(filepath.Join(dir, "opt/cni/bin/istio-cni")); err != nil || st.Mode()&0o111 == 0 {
				t.Errorf("install-cni image: istio-cni plugin: %v", err)
			}
		}
	}
	if _, err := Images(b, ImageOptions{}); err == nil || !strings.Contains(err.Error(), "Envoy") {
		t.Errorf("no Envoy: %v", err)
	}
}

// TestInstallRenders: the build's istioctl, with InstallArgs, renders
// (manifest generate, no cluster) istiod, istio-cni and ztunnel from the
// images Images names, the sidecar injector with proxyv2 from them, and
// istiod with the overlay's settings; the EnvoyFilters decode.
func TestInstallRenders(t *testing.T) {
	b := requireBuild(t)
	ctx := context.Background()
	args := append([]string{"manifest", "generate", "--set", "profile=ambient"}, InstallArgs("", "")...)
	out, err := exec.CommandContext(ctx, b.Path("istioctl"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("istioctl %v: %v\n%s", args, err, out)
	}
	s := string(out)
	for _, img := range []string{"pilot", "install-cni", "ztunnel"} {
		if want := "image: " + DefaultHub + "/" + img + ":" + Version + "\n"; !strings.Contains(s, want) {
			t.Errorf("manifest lacks %q", strings.TrimSpace(want))
		}
	}
	if strings.Contains(s, "distroless") {
		t.Error("manifest names -distroless images")
	}
	for _, want := range []string{
		`"hub": "` + DefaultHub + `"`, `"image": "proxyv2"`, `"tag": "` + Version + `"`, // the injector's values
		"name: PILOT_ENABLE_METADATA_EXCHANGE\n          value: \"false\"",
		"name: PILOT_ENABLE_ALPN_FILTER\n          value: \"false\"",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("manifest lacks %q", want)
		}
	}
	if strings.Contains(s, "istio.stats") || strings.Contains(s, "stats-filter") {
		t.Error("manifest still has Istio's stats filter")
	}
	objs, err := EnvoyFilters()
	if err != nil || len(objs) != 1 {
		t.Fatalf("EnvoyFilters: %v, %d objects", err, len(objs))
	}
	u := objs[0].(*unstructured.Unstructured)
	if u.GetKind() != "EnvoyFilter" || u.GetNamespace() != "istio-system" {
		t.Errorf("EnvoyFilter %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	// A waypoint's own copy of the EnvoyFilter: in its namespace, aimed
	// at its Gateway.
	wf := WaypointEnvoyFilter("demo", "waypoint")
	if len(wf) != 1 {
		t.Fatalf("WaypointEnvoyFilter: %d objects", len(wf))
	}
	wu := wf[0].(*unstructured.Unstructured)
	refs, _, _ := unstructured.NestedSlice(wu.Object, "spec", "targetRefs")
	patches, _, _ := unstructured.NestedSlice(wu.Object, "spec", "configPatches")
	if wu.GetNamespace() != "demo" || len(refs) != 1 || refs[0].(map[string]any)["name"] != "waypoint" || len(patches) != 3 {
		t.Errorf("waypoint EnvoyFilter %s/%s, targetRefs %v, %d patches", wu.GetNamespace(), wu.GetName(), refs, len(patches))
	}
	// The Gateway API CRDs of the build, Gateway among them
	// (platform/kube/install's TestIstioBuilt checks the install applies
	// them before the EnvoyFilter).
	crds, err := GatewayCRDs(b)
	var names []string
	for _, o := range crds {
		u := o.(*unstructured.Unstructured)
		names = append(names, u.GetKind()+"/"+u.GetName())
	}
	if err != nil || !slices.Contains(names, "CustomResourceDefinition/gateways.gateway.networking.k8s.io") {
		t.Errorf("GatewayCRDs %v (%v); want the Gateway API CRDs", names, err)
	}
}

// TestParseSyncz: istiod's syncz (testdata/syncz-gateway.json: a real
// answer for the ingress gateway on upstream Envoy, plus istioctl's own
// debug client, which has no cluster and is left out) gives an all-ACK
// row; a NACKed type (the shape istiod records when Envoy rejects a push)
// is reported with its error and as a NACK row.
func TestParseSyncz(t *testing.T) {
	data, err := os.ReadFile("testdata/syncz-gateway.json")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ParseSyncz(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Type != "router" || len(NotACKed(ps)) != 0 {
		t.Fatalf("proxies %+v, not ACKed %v; want the gateway, all ACKed", ps, NotACKed(ps))
	}
	nack := []byte(`[{"cluster_id":"Kubernetes","proxy":"a.demo","proxy_type":"sidecar","istio_version":"1.31",
	  "resources":{"type.googleapis.com/envoy.config.listener.v3.Listener":{"sent":"v2","acked":"v1","lastError":"Didn't find a registered implementation for 'istio.alpn'"},
	               "type.googleapis.com/envoy.config.cluster.v3.Cluster":{"sent":"v2","acked":"v2"},
	               "type.googleapis.com/envoy.config.route.v3.RouteConfiguration":{"sent":"v3","acked":"v2"}}}]`)
	ps2, err := ParseSyncz(nack)
	if err != nil {
		t.Fatal(err)
	}
	bad := NotACKed(ps2)
	if len(bad) != 2 || !strings.Contains(bad[0], "LDS: NACK: Didn't find") || !strings.Contains(bad[1], "RDS: pending") {
		t.Errorf("not ACKed %q; want LDS's NACK and RDS pending", bad)
	}
	rows := SyncRows(ps2)
	if len(rows) != 1 || rows[0].States["LDS"] != "NACK" || rows[0].States["CDS"] != "ACK" || rows[0].States["RDS"] != "pending" {
		t.Errorf("rows %+v; want LDS NACK, CDS ACK, RDS pending (report's TestSyncTable prints them)", rows)
	}
	if _, err := ParseSyncz([]byte("{")); err == nil {
		t.Error("bad JSON: no error")
	}
}
