// Command testcluster starts the same throw-away Kubernetes cluster the tests
// use (see internal/kubetest) and keeps it up until Ctrl-C or SIGTERM, for
// manual demos:
//
//	make k8s-tools
//	go run ./hack/testcluster            # prints export KUBECONFIG=...
//	kubectl get nodes                    # in another shell, with that KUBECONFIG
//
// kubectl is the one built by make k8s-tools (in the printed PATH line).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/kubetest"
)

func main() {
	nodes := flag.Int("nodes", 2, "number of kwok nodes")
	dir := flag.String("dir", "", "directory for the cluster's files (default: a temporary one, removed on exit)")
	keep := flag.Bool("keep", false, "keep the cluster's files (logs) after it stops")
	flag.Parse()
	if err := run(*nodes, *dir, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		os.Exit(1)
	}
}

func run(nodes int, dir string, keep bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	c, err := kubetest.Start(startCtx, kubetest.Options{Nodes: nodes, Dir: dir, KeepDir: keep, Log: os.Stderr})
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
