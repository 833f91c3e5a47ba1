package image

import (
	"slices"
	"testing"
)

// TestIptables: the host's iptables under every name the meshes' capture
// tools run (Linkerd's proxy-init calls /usr/sbin/iptables-nft and
// -nft-save by absolute path), as links to the two multi-call binaries,
// with their modules; WithLibraries adds what the ELF files load, once.
func TestIptables(t *testing.T) {
	files, elfs, err := Iptables()
	if err != nil {
		t.Skip(err) // Debian's iptables is not installed here
	}
	links := map[string]string{}
	for _, f := range files {
		links[f.Path] = f.Link
	}
	for _, n := range []string{"iptables-nft", "iptables-nft-save", "iptables-legacy", "ip6tables-nft-restore"} {
		if links["/usr/sbin/"+n] == "" {
			t.Errorf("/usr/sbin/%s: not a link to a multi-call binary", n)
		}
	}
	if !slices.Contains(elfs, "/usr/sbin/xtables-nft-multi") || len(elfs) < 3 {
		t.Errorf("ELF files %v", elfs)
	}
	with, err := WithLibraries(files, append(elfs, elfs[0])...)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range with {
		if seen[f.Path] {
			t.Errorf("%s twice", f.Path)
		}
		seen[f.Path] = true
	}
	if len(with) <= len(files) || !seen["/lib64/ld-linux-x86-64.so.2"] {
		t.Errorf("%d files with the libraries, %d without; want the loader added", len(with), len(files))
	}
}
