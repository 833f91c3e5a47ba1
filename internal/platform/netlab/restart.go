package netlab

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/sys/process"
)

// The real control planes' processes restarted by a fault (issue 31 on
// the lab with --control-plane istiod or linkerd): each is killed with
// SIGKILL and started again with the same command, environment and files,
// as a kubelet restarts a container, the lab's API server untouched (so
// istiod's CA, its istio-ca-secret there, and every token stay valid). The
// killed process's log is kept as NAME.previous.log, as `kubectl logs
// --previous` keeps it.

// Restart kills istiod and starts it again, returning once its /ready
// answers, with the new process.
func (d *Istiod) Restart(ctx context.Context) (*process.Child, error) {
	old := d.proc()
	process.KillGroup(old.PID)
	<-old.Done()
	keepPrevious(old.LogFile)
	if err := d.runIstiod(ctx); err != nil {
		return nil, err
	}
	return d.proc(), nil
}

// RestartAgent kills pod's istio-proxy container, pilot-agent and its
// Envoy (what a container's death kills), and starts pilot-agent again
// with the same bootstrap template, token and environment, returning
// once its Envoy is ready, with the new pilot-agent and Envoy PID.
func (d *Istiod) RestartAgent(ctx context.Context, pod string) (*process.Child, int, error) {
	p := d.lab.Pod(pod)
	old := d.agent(pod)
	if p == nil || old == nil {
		return nil, 0, fmt.Errorf("no pilot-agent in pod %s", pod)
	}
	envoy, err := childPID(old.PID, "envoy")
	if err != nil {
		return nil, 0, err
	}
	process.KillGroup(old.PID)
	// pilot-agent may have put Envoy in a group of its own.
	_ = syscall.Kill(envoy, syscall.SIGKILL)
	<-old.Done()
	if err := waitGone(envoy, 10*time.Second); err != nil {
		return nil, 0, err
	}
	keepPrevious(old.LogFile)
	if err := d.runAgent(ctx, p); err != nil {
		return nil, 0, err
	}
	a := d.agent(pod)
	envoy, err = childPID(a.PID, "envoy")
	if err != nil {
		return nil, 0, err
	}
	return a, envoy, nil
}

// RestartDestination kills the processes of Linkerd's destination pod
// that run here, the destination and policy controllers (deleting the pod
// on a cluster kills both), and starts them again, returning once both
// are ready.
func (c *LinkerdControllers) RestartDestination(ctx context.Context) (destination, policy *process.Child, err error) {
	names := []string{"destination", "policy"}
	for _, name := range names {
		process.KillGroup(c.proc(name).PID)
	}
	for _, name := range names {
		old := c.proc(name)
		<-old.Done()
		keepPrevious(old.LogFile)
	}
	for _, name := range names {
		if err := c.run(ctx, name); err != nil {
			return nil, nil, err
		}
	}
	return c.proc("destination"), c.proc("policy"), nil
}

// keepPrevious renames a killed process's log NAME.log to
// NAME.previous.log (its replacement writes NAME.log).
func keepPrevious(log string) {
	_ = os.Rename(log, strings.TrimSuffix(log, ".log")+".previous.log")
}

// waitGone waits until process pid has exited (gone, or a zombie).
func waitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d still running %v after SIGKILL", pid, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
