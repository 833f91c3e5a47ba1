package image

import (
	"fmt"
	"os"
	"path/filepath"
)

// iptablesTools are Debian's nft and legacy multi-call binaries under every
// name the meshes' capture tools run: Istio's istio-init and istio-cni (which
// detect the mode in use from both) and Linkerd's proxy-init (which calls
// /usr/sbin/iptables-nft, -nft-save, and the -legacy ones by absolute path).
var iptablesTools = map[string][]string{
	"xtables-nft-multi": {"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore",
		"iptables-nft", "iptables-nft-save", "iptables-nft-restore", "ip6tables-nft", "ip6tables-nft-save", "ip6tables-nft-restore"},
	"xtables-legacy-multi": {"iptables-legacy", "iptables-legacy-save", "iptables-legacy-restore",
		"ip6tables-legacy", "ip6tables-legacy-save", "ip6tables-legacy-restore"},
}

// xtablesDir holds the iptables match and target modules.
const xtablesDir = "/usr/lib/x86_64-linux-gnu/xtables"

// Iptables returns the host's iptables tools (/usr/sbin, under every name
// of iptablesTools) with their modules, as image files, and the ELF files
// among them (for WithLibraries). The error says to install Debian's
// iptables when they are missing: a mesh's proxy image needs them for its
// capture rules, and its own base image comes from a registry the test
// machines cannot reach.
func Iptables() (files []File, elfs []string, err error) {
	for multi, names := range iptablesTools {
		src := filepath.Join("/usr/sbin", multi)
		if _, err := os.Stat(src); err != nil {
			return nil, nil, fmt.Errorf("the proxy images need Debian's iptables (%s): apt-get install iptables: %w", src, err)
		}
		files = append(files, File{Path: src, Source: src, Mode: 0o755})
		elfs = append(elfs, src)
		for _, n := range names {
			files = append(files, File{Path: "/usr/sbin/" + n, Link: multi})
		}
	}
	mods, _ := filepath.Glob(filepath.Join(xtablesDir, "*.so"))
	if len(mods) == 0 {
		return nil, nil, fmt.Errorf("no iptables modules in %s: apt-get install iptables", xtablesDir)
	}
	for _, m := range mods {
		files = append(files, File{Path: m, Source: m, Mode: 0o644})
		elfs = append(elfs, m)
	}
	return files, elfs, nil
}

// WithLibraries adds to files the program interpreter and libraries the
// ELF files elfs need (SharedLibraries), leaving out paths files already
// has.
func WithLibraries(files []File, elfs ...string) ([]File, error) {
	libs, err := SharedLibraries(elfs...)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f.Path] = true
	}
	for _, l := range libs {
		if !have[l.Path] {
			files = append(files, l)
			have[l.Path] = true
		}
	}
	return files, nil
}
