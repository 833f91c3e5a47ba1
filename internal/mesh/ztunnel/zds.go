package ztunnel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/meshbench/meshbench/internal/mesh/ztunnel/zdsapi"
)

// Pod is one pod the ZDS agent hands to ztunnel: its identity and the
// path of its network namespace file.
type Pod struct {
	UID            string
	Name           string
	Namespace      string
	ServiceAccount string
	NetnsPath      string
}

// maxMessage bounds one ZDS message (ztunnel's are a few bytes).
const maxMessage = 64 << 10

// Agent plays istio-cni's node agent for one shared-mode ztunnel: it
// listens on the unix SOCK_SEQPACKET socket that ztunnel's INPOD_UDS names,
// and on every connection reads ZdsHello, sends an AddWorkload with the
// pod's netns fd (SCM_RIGHTS) per pod, each acked, then SnapshotSent, and
// holds the connection (ztunnel takes a closed one for an agent restart and
// reconnects; the agent then sends the snapshot again).
type Agent struct {
	Path string
	lis  *net.UnixListener

	mu      sync.Mutex
	pods    []Pod
	conn    *net.UnixConn
	synced  chan struct{} // closed when the first snapshot is acked
	syncErr error
	once    sync.Once
}

// Listen opens the agent's socket at path (removing a stale one).
func Listen(path string, pods []Pod) (*Agent, error) {
	_ = os.Remove(path)
	lis, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("listening for ztunnel on %s: %w", path, err)
	}
	return &Agent{Path: path, lis: lis, pods: append([]Pod(nil), pods...), synced: make(chan struct{})}, nil
}

// Serve accepts ztunnel's connections until ctx ends or Close.
func (a *Agent) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { a.lis.Close() })
	defer stop()
	for {
		c, err := a.lis.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accepting ztunnel on %s: %w", a.Path, err)
		}
		err = a.session(c)
		a.once.Do(func() { a.syncErr = err; close(a.synced) })
		if err != nil {
			c.Close()
			continue
		}
		// Hold the connection until ztunnel closes it.
		buf := make([]byte, maxMessage)
		for {
			if _, _, _, _, err := c.ReadMsgUnix(buf, nil); err != nil {
				break
			}
		}
		a.mu.Lock()
		if a.conn == c {
			a.conn = nil
		}
		a.mu.Unlock()
		c.Close()
	}
}

// Synced waits until the first snapshot was acked by ztunnel, or ctx ends,
// or exited (if not nil) is closed: ztunnel is gone.
func (a *Agent) Synced(ctx context.Context, exited <-chan struct{}) error {
	select {
	case <-exited:
		return errors.New("ztunnel exited before it took the pods")
	case <-a.synced:
		return a.syncErr
	case <-ctx.Done():
		return fmt.Errorf("waiting for ztunnel to take the pods: %w", ctx.Err())
	}
}

// Close stops listening and drops ztunnel's connection.
func (a *Agent) Close() error {
	err := a.lis.Close()
	a.mu.Lock()
	if a.conn != nil {
		a.conn.Close()
	}
	a.mu.Unlock()
	_ = os.Remove(a.Path)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Add hands one more pod to a connected ztunnel (and to later snapshots).
func (a *Agent) Add(p Pod) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods = append(a.pods, p)
	if a.conn == nil {
		return nil // goes with the next snapshot
	}
	return addPod(a.conn, p)
}

// Del removes a pod from a connected ztunnel.
func (a *Agent) Del(uid string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, p := range a.pods {
		if p.UID == uid {
			a.pods = append(a.pods[:i], a.pods[i+1:]...)
			break
		}
	}
	if a.conn == nil {
		return nil
	}
	return request(a.conn, &zdsapi.WorkloadRequest{Payload: &zdsapi.WorkloadRequest_Del{Del: &zdsapi.DelWorkload{Uid: uid}}}, -1)
}

func (a *Agent) session(c *net.UnixConn) error {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	buf := make([]byte, maxMessage)
	n, _, _, _, err := c.ReadMsgUnix(buf, nil)
	if err != nil {
		return fmt.Errorf("reading ztunnel's hello: %w", err)
	}
	var hello zdsapi.ZdsHello
	if err := proto.Unmarshal(buf[:n], &hello); err != nil {
		return fmt.Errorf("reading ztunnel's hello: %w", err)
	}
	if hello.GetVersion() != zdsapi.Version_V1 {
		return fmt.Errorf("ztunnel speaks ZDS version %v, the agent V1", hello.GetVersion())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.pods {
		if err := addPod(c, p); err != nil {
			return err
		}
	}
	if err := request(c, &zdsapi.WorkloadRequest{Payload: &zdsapi.WorkloadRequest_SnapshotSent{SnapshotSent: &zdsapi.SnapshotSent{}}}, -1); err != nil {
		return fmt.Errorf("sending the snapshot's end: %w", err)
	}
	a.conn = c
	return nil
}

func addPod(c *net.UnixConn, p Pod) error {
	f, err := os.Open(p.NetnsPath)
	if err != nil {
		return fmt.Errorf("adding pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	defer f.Close()
	req := &zdsapi.WorkloadRequest{Payload: &zdsapi.WorkloadRequest_Add{Add: &zdsapi.AddWorkload{
		Uid:          p.UID,
		WorkloadInfo: &zdsapi.WorkloadInfo{Name: p.Name, Namespace: p.Namespace, ServiceAccount: p.ServiceAccount},
	}}}
	if err := request(c, req, int(f.Fd())); err != nil {
		return fmt.Errorf("adding pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// request sends req (with fd as SCM_RIGHTS when fd ≥ 0) and reads the ack.
func request(c *net.UnixConn, req *zdsapi.WorkloadRequest, fd int) error {
	b, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	if _, _, err := c.WriteMsgUnix(b, oob, nil); err != nil {
		return fmt.Errorf("writing to ztunnel: %w", err)
	}
	buf := make([]byte, maxMessage)
	n, _, _, _, err := c.ReadMsgUnix(buf, nil)
	if err != nil {
		return fmt.Errorf("reading ztunnel's ack: %w", err)
	}
	var resp zdsapi.WorkloadResponse
	if err := proto.Unmarshal(buf[:n], &resp); err != nil {
		return fmt.Errorf("reading ztunnel's ack: %w", err)
	}
	if e := resp.GetAck().GetError(); e != "" {
		return fmt.Errorf("ztunnel refused: %s", e)
	}
	if resp.GetAck() == nil {
		return errors.New("ztunnel answered without an ack")
	}
	return nil
}
