package nodes

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestConfigs renders node 1's files for a fixed layout and compares
// them with golden files: the settings this machine needs (cgroup v1,
// restricted oom_score_adj, per-node roots and sockets, no AppArmor, the
// pinned sandbox image, CNI data under the node's dir) must not drift.
func TestConfigs(t *testing.T) {
	cfg := &Config{Prefix: "mbn7", Dir: "/nodes", ClusterCIDR: netip.MustParsePrefix("10.135.0.0/16"),
		Kubeconfig: "/c/kubeconfig", CAFile: "/c/pki/ca.crt", ServingCert: "/c/pki/serving.crt", ServingKey: "/c/pki/serving.key"}
	nd := &Node{Name: "mbn7-node-1", IP: netip.MustParseAddr("10.99.7.3"), PodCIDR: netip.MustParsePrefix("10.135.1.0/24"),
		Dir: "/nodes/node-1", Socket: "/nodes/node-1/containerd.sock"}
	gw := netip.MustParseAddr("10.99.7.1")
	for name, got := range map[string][]byte{
		"containerd.toml":  containerdConfig(nd.Dir, "registry.k8s.io/pause:3.10"),
		"10-pods.conflist": cniConfig(cfg.Prefix, 1, nd),
		"kubelet.yaml":     kubeletConfig(cfg, 1, nd, gw),
		"kube-proxy.yaml":  kubeProxyConfig(cfg, nd),
		"Corefile":         corefile(gw, cfg.Kubeconfig, "test"),
	} {
		testutil.Golden(t, name, got)
	}
}

// TestCheckMissing: an empty binary directory is reported with every
// missing binary and the command that builds them, in one error.
func TestCheckMissing(t *testing.T) {
	dir := t.TempDir()
	err := Check(dir)
	if err == nil {
		t.Fatal("no error for an empty directory")
	}
	for _, b := range Binaries {
		if !strings.Contains(err.Error(), filepath.Join(dir, b)+" (make k8s-tools)") {
			t.Errorf("error does not name %s: %v", b, err)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`/a/b`, `/a/b`},             // plain
		{`/a\040b`, `/a b`},          // a space
		{`/a\134b`, `/a\b`},          // a backslash
		{`/a\04`, `/a\04`},           // a cut-off escape stays
		{`/x\011y\012z`, "/x\ty\nz"}, // tab and newline
	} {
		if got := unescapeMount(tc.in); got != tc.want {
			t.Errorf("unescapeMount(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestBinDirEnv: MESHBENCH_NODES_BIN overrides the default.
func TestBinDirEnv(t *testing.T) {
	t.Setenv(BinEnv, "/x")
	if BinDir() != "/x" {
		t.Errorf("BinDir() = %q", BinDir())
	}
	os.Unsetenv(BinEnv)
	if !strings.Contains(BinDir(), "nodes-"+KubernetesVersion) {
		t.Errorf("default BinDir() = %q", BinDir())
	}
}

// TestMountScript: every HostDirs entry is bind-mounted from the node's
// directory onto its well-known path, the netns directory made shared
// (after its bind: a shared flag set before would be on the host's view),
// and a quote in the node's directory cannot break out of the script.
func TestMountScript(t *testing.T) {
	got := mountScript("/n/node-0")
	for _, d := range HostDirs {
		if want := "mount --bind '/n/node-0/" + d.Dir + "' '" + d.Path + "'; "; !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(got, "mount --make-shared '"+NodeNetnsDir+"'; ") || !strings.HasPrefix(got, "set -e; ") {
		t.Errorf("script does not stop on the first failure or does not share %s:\n%s", NodeNetnsDir, got)
	}
	if !strings.HasSuffix(got, "mount --bind '/n/node-0/proc1' /proc/1; ") {
		t.Errorf("script does not end by making the node's PID 1:\n%s", got)
	}
	if q := shellQuote("/a'b"); q != `'/a'\''b'` {
		t.Errorf("shellQuote(/a'b) = %s", q)
	}
}
