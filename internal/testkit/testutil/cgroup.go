package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// KubepodsCgroup makes, in this machine's cgroup v1 cpuacct hierarchy,
// meshbench-test-nodekernel-<PID>/kubepods/besteffort/pod<uid> (a
// kubelet's layout under a cgroupRoot, as the test nodes have) and
// returns the pod's directory; it is removed at the test's end, its
// processes moved back to the root first. It skips without root or v1.
func KubepodsCgroup(t testing.TB, uid string) string {
	t.Helper()
	base := "/sys/fs/cgroup/cpuacct"
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup needs root")
	}
	if _, err := os.Stat(filepath.Join(base, "cpuacct.stat")); err != nil {
		t.Skip("no cgroup v1 cpuacct hierarchy:", err)
	}
	top := filepath.Join(base, fmt.Sprintf("meshbench-test-nodekernel-%d", os.Getpid()))
	dirs := []string{top, filepath.Join(top, "kubepods"), filepath.Join(top, "kubepods", "besteffort"),
		filepath.Join(top, "kubepods", "besteffort", "pod"+uid)}
	t.Cleanup(func() {
		for i := len(dirs) - 1; i >= 0; i-- {
			if b, err := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs")); err == nil && len(b) > 0 {
				for _, pid := range strings.Fields(string(b)) {
					_ = os.WriteFile(filepath.Join(base, "cgroup.procs"), []byte(pid), 0o644)
				}
			}
			for try := 0; try < 50; try++ {
				if err := os.Remove(dirs[i]); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dirs[len(dirs)-1]
}
