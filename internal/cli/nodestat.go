package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// maxNodestatFor bounds `meshbench nodestat --for`: a reader a killed
// meshbench left behind stops by itself.
const maxNodestatFor = 24 * time.Hour

// newNodestatCmd is the hidden `meshbench nodestat`: the node reader of a
// cluster cell's kernel CPU, run in a pod of meshbench's image on each
// node (platform/kube, nodekernel.go). It finds the node's pods' cgroup
// by its own pod's UID (sample.FindPodsCgroup) under --cgroup-root (the
// host's cgroup tree, mounted read-only) and prints a reading
// (sample.NodeReading, one JSON line) every --every until --for has
// passed or SIGINT/SIGTERM (the pod's delete). What stops it from
// reading goes to stderr and to --report (the pod's termination message).
func newNodestatCmd(env *Env) *cobra.Command {
	var cgroupRoot, proc, podUID, report string
	var every, length time.Duration
	cmd := &cobra.Command{
		Use:    "nodestat",
		Short:  "Print the node's /proc/stat and its pods' cgroup CPU as JSON lines (a cluster cell's node reader)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every < 100*time.Millisecond || every > time.Minute {
				return usagef("--every %s: allowed: 100ms to 1m", every)
			}
			if length <= 0 || length > maxNodestatFor {
				return usagef("--for %s: allowed: above 0s, at most %s", length, maxNodestatFor)
			}
			if podUID == "" {
				return usagef("--pod-uid: required (the reader's own pod, from the downward API)")
			}
			fail := func(err error) error {
				if report != "" {
					_ = os.WriteFile(report, []byte("nodestat: "+err.Error()+"\n"), 0o644)
				}
				return err
			}
			pods, err := sample.FindPodsCgroup(cgroupRoot, podUID)
			if err != nil {
				return fail(err)
			}
			enc := json.NewEncoder(env.Stdout)
			ctx := cmd.Context()
			end := time.NewTimer(length)
			defer end.Stop()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				r, err := sample.ReadNode(proc, pods)
				if err != nil {
					return fail(fmt.Errorf("reading the node: %w", err))
				}
				if err := enc.Encode(r); err != nil {
					return err
				}
				select {
				case <-ctx.Done():
					return nil
				case <-end.C:
					return nil
				case <-tick.C:
				}
			}
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cgroupRoot, "cgroup-root", "/sys/fs/cgroup", "the host's cgroup tree (v1: the directory holding cpuacct)")
	fl.StringVar(&proc, "proc", "/proc", "the host's /proc (stat and the boot ID are not namespaced: a container's own /proc serves)")
	fl.StringVar(&podUID, "pod-uid", "", "the reader's own pod's UID: it picks the node's pods' cgroup")
	fl.DurationVar(&every, "every", time.Second, "how often it reads")
	fl.DurationVar(&length, "for", 0, "how long it reads at most")
	fl.StringVar(&report, "report", "", "write what stopped it to this file (a pod's termination message)")
	return cmd
}
