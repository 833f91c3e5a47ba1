// Command pause is the sandbox ("pause") process of the real test nodes'
// pods: it sleeps until SIGTERM or SIGINT and reaps the children it
// inherits as a PID namespace's init. hack/k8s/build-nodes.sh builds it
// static; internal/testkit/kubetest packs it as the image containerd pins as its
// sandbox image, so nothing is pulled from a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
