package nodes

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
)

// writeConfigs writes node i's containerd.toml, CNI network, kubelet.yaml
// and kube-proxy.yaml into nd.Dir.
func (n *Nodes) writeConfigs(i int, nd *Node, gw netip.Addr) error {
	cfg := &n.cfg
	files := map[string][]byte{
		"containerd.toml":      containerdConfig(nd.Dir, cfg.SandboxImage),
		"cni/10-pods.conflist": cniConfig(cfg.Prefix, i, nd),
		"kubelet.yaml":         kubeletConfig(cfg, i, nd, gw),
		"kube-proxy.yaml":      kubeProxyConfig(cfg, nd),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(nd.Dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig is containerd's defaults with this node's paths and the
// settings this machine needs (see the package doc): sandbox image pinned
// (never pulled), Debian's runc with its own root, oom_score_adj
// restricted, no AppArmor, NRI on a socket of its own. The CNI paths and
// the pods' netns files are the well-known ones a real node has
// (/etc/cni/net.d, /opt/cni/bin then Debian's plugins, /var/run/netns):
// containerd runs in the node's own mount namespace, where they are the
// node's directories (see HostDirs), so a CNI installer such as
// istio-cni finds and changes this node's files only.
func containerdConfig(dir, sandbox string) []byte {
	q := strconv.Quote
	p := func(name string) string { return q(filepath.Join(dir, name)) }
	return fmt.Appendf(nil, `version = 3
root = %s
state = %s
imports = []

[grpc]
  address = %s

[ttrpc]
  address = %s

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %s

  [plugins.'io.containerd.cri.v1.runtime']
    disable_apparmor = true
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = %s
          Root = %s
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [%s, %s]
      conf_dir = %s

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
    socket_path = %s

  [plugins.'io.containerd.internal.v1.opt']
    path = %s
`, p("containerd/root"), p("containerd/state"), p("containerd.sock"), p("containerd.sock.ttrpc"),
		q(sandbox), q(RuncBin), p("runc"), q(NodeCNIBinDir), q(CNIBinDir), q(NodeCNIConfDir), p("nri.sock"), p("opt"))
}

// cniConfig is one bridge network on the node's pod CIDR (host-local IPAM
// with its data under the node's dir, not /var/lib/cni).
func cniConfig(prefix string, i int, nd *Node) []byte {
	gw := nd.PodCIDR.Masked().Addr().Next()
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       fmt.Sprintf("%s-pods-%d", prefix, i),
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"dataDir": filepath.Join(nd.Dir, "ipam"),
				"ranges":  []any{[]any{map[string]any{"subnet": nd.PodCIDR.Masked().String(), "gateway": gw.String()}}},
				"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
			},
		}, map[string]any{"type": "loopback"}},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return b
}

func kubeletConfig(cfg *Config, i int, nd *Node, dns netip.Addr) []byte {
	return fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 (this machine cannot switch): kubelet 1.36 refuses it otherwise.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %s
makeIPTablesUtilChains: false
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
clusterDNS: [%s]
failSwapOn: false
podLogsDir: %s
resolvConf: /etc/resolv.conf
maxPods: 50
serializeImagePulls: false
# Imported images must never be garbage-collected (nothing can pull them).
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "2%%", imagefs.available: "2%%"}
nodeStatusUpdateFrequency: 2s
# The lease is renewed every quarter of this (2.5 s): a stopped kubelet's
# node can be declared NotReady after 10 s (kube-controller-manager's
# --node-monitor-grace-period, which internal/kubetest sets).
nodeLeaseDurationSeconds: 10
`, cfg.cgroupRoot(i), nd.Socket, nd.IP, cfg.ServingCert, cfg.ServingKey, cfg.CAFile, dns,
		filepath.Join(nd.Dir, "podlogs"))
}

func kubeProxyConfig(cfg *Config, nd *Node) []byte {
	return fmt.Appendf(nil, `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["%s/32"]
clientConnection: {kubeconfig: %s}
conntrack: {maxPerCore: 0, min: 0}
`, cfg.ClusterCIDR, nd.Name, nd.IP, nd.IP, cfg.Kubeconfig)
}

// corefile serves cluster.local from the API on the bridge address (the
// nodes' clusterDNS) and nothing else: names outside the cluster fail.
func corefile(addr netip.Addr, kubeconfig, context string) []byte {
	return fmt.Appendf(nil, `.:53 {
    bind %s
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`, addr, kubeconfig, context)
}
