// Command testcluster starts the same throw-away Kubernetes cluster the tests
// use (see internal/testkit/kubetest) and keeps it up until Ctrl-C or SIGTERM, for
// manual demos:
//
//	make k8s-tools
//	go run ./hack/testcluster            # prints export KUBECONFIG=...
//	kubectl get nodes                    # in another shell, with that KUBECONFIG
//
// kubectl is the one built by make k8s-tools (in the printed PATH line).
//
// With -real the nodes are real (containerd, kubelet, kube-proxy, CoreDNS;
// needs root) and run meshbench's image, built from this checkout:
//
//	go run ./hack/testcluster -real      # then: meshbench run --platform kube ...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

func main() {
	nodes := flag.Int("nodes", 2, "number of nodes")
	real := flag.Bool("real", false, "real nodes (containerd, kubelet, kube-proxy; needs root) instead of kwok's")
	dir := flag.String("dir", "", "directory for the cluster's files (default: a temporary one, removed on exit)")
	keep := flag.Bool("keep", false, "keep the cluster's files (logs) after it stops")
	flag.Parse()
	if err := run(*nodes, *dir, *keep, *real); err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		os.Exit(1)
	}
}

func run(nodes int, dir string, keep, real bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	o := kubetest.Options{Nodes: nodes, Dir: dir, KeepDir: keep, Log: os.Stderr, RealNodes: real}
	if real {
		bin, err := os.MkdirTemp("", "testcluster-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(bin)
		o.Meshbench = filepath.Join(bin, "meshbench")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.Meshbench, "./cmd/meshbench")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building a static meshbench for the nodes' image (run from the repository's root): %w", err)
		}
	}
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	c, err := kubetest.Start(startCtx, o)
	cancel()
	if err != nil {
		return err
	}
	fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig)
	fmt.Printf("export PATH=%s:$PATH\n", c.BinDir)
	fmt.Fprintf(os.Stderr, "testcluster: contexts %q (client certificate) and %q (bearer token); logs in %s; Ctrl-C stops it\n",
		c.Context, c.TokenContext, c.Dir+"/logs")

	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "testcluster: stopping")
	return c.Stop()
}
