package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/workload"
)

// The slow-replica fault on a cluster: in such a cell the replicas of the
// slowed service run `serve --control 127.0.0.1:ControlPort`
// (Spec.ControlService), and at the fault's time the scheduler reaches
// the first N Ready ones (by name: the first is the pod the other faults
// hit) through a port-forward each, as `kubectl port-forward` does: the
// API server, the kubelet and the container runtime open a connection to
// the port inside the pod's network namespace, on its loopback, where no
// mesh captures or counts it. Nothing of the pods changes: the delay is
// set and taken away through the control API (and the replica's own
// measure of its waits read back), also on failure and Ctrl-C; a replica
// whose undo failed is deleted with the cell's namespace at its end.

var _ fault.ReplicaReacher = faultTarget{}

// ReachReplicas opens the control of the first n Ready replicas of svc.
func (t faultTarget) ReachReplicas(ctx context.Context, svc string, n int) ([]fault.Replica, func(), error) {
	return t.r.c.ReachReplicas(ctx, t.r.o.Spec, svc, n)
}

// ReachReplicas is faultTarget.ReachReplicas for the cell of spec s.
func (c *Cluster) ReachReplicas(ctx context.Context, s Spec, svc string, n int) (reps []fault.Replica, closeAll func(), err error) {
	s = s.WithDefaults()
	if svc == "" {
		svc = s.appServices()[0].name
	}
	if svc != s.ControlService {
		return nil, nil, fmt.Errorf("the replicas of service %s serve no control API in this cell (only %q's do)", svc, s.ControlService)
	}
	sel := LabelRole + "=" + RoleApp + "," + LabelApp + "=" + svc
	pods, err := c.readyPods(ctx, s.AppNamespace, sel, "")
	if err != nil {
		return nil, nil, err
	}
	if len(pods) < n {
		return nil, nil, fmt.Errorf("%d replica(s) of %s to slow, %d Ready", n, svc, len(pods))
	}
	var stops []func()
	closeAll = func() {
		for _, stop := range stops {
			stop()
		}
	}
	for _, p := range pods[:n] {
		addr, stop, err := c.portForward(ctx, s.AppNamespace, p.Name, ControlPort)
		if err != nil {
			return reps, closeAll, fmt.Errorf("port-forward to pod %s/%s port %d: %w", s.AppNamespace, p.Name, ControlPort, err)
		}
		stops = append(stops, stop)
		reps = append(reps, fault.Replica{Name: "pod " + s.AppNamespace + "/" + p.Name, Control: workload.Control{Path: addr}})
	}
	return reps, closeAll, nil
}

// lockedBuffer is an io.Writer for the port-forward's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// portForward forwards a port of this machine's loopback to port of pod
// ns/pod (client-go's port-forward: WebSocket, else SPDY) and returns
// its local address once it listens, and what stops it.
func (c *Cluster) portForward(ctx context.Context, ns, pod string, port int) (addr string, stop func(), err error) {
	url := c.Core.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(c.Config)
	if err != nil {
		return "", nil, err
	}
	dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	if ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(url, c.Config); err == nil {
		dialer = portforward.NewFallbackDialerForStreaming(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	stopCh, ready := make(chan struct{}), make(chan struct{})
	var errOut lockedBuffer
	fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stopCh, ready, io.Discard, &errOut)
	if err != nil {
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(stopCh)
			<-done
		})
	}
	select {
	case <-ready:
	case err := <-done:
		if err == nil {
			err = errors.New("it ended before it listened")
		}
		return "", nil, fmt.Errorf("%w %s", err, strings.TrimSpace(errOut.String()))
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return "", nil, fmt.Errorf("its local port: %v", err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), stop, nil
}
