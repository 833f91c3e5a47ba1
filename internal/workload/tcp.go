package workload

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// TCPReadBuffer is the tcp workload's per-connection read buffer (64 KiB):
// each read of up to this many bytes is one "request" for fault injection and
// is echoed back whole.
const TCPReadBuffer = 64 << 10

// tcpEcho is an L4 echo server.
type tcpEcho struct {
	ln  net.Listener
	inj *injector
	// ctx is cancelled when a shutdown runs out of time; fault waits end then.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	conns    map[net.Conn]struct{} // guarded by mu
	draining bool                  // guarded by mu
	wg       sync.WaitGroup
}

// startTCP returns the serve loop and the graceful stop of the tcp workload
// on ln.
func startTCP(ln net.Listener, inj *injector) (serve func() error, stop func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &tcpEcho{ln: ln, inj: inj, ctx: ctx, cancel: cancel, conns: make(map[net.Conn]struct{})}
	return e.serve, e.stop
}

func (e *tcpEcho) serve() error {
	var backoff time.Duration
	for {
		c, err := e.ln.Accept()
		if err != nil {
			if e.isDraining() {
				return nil
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors: back off like net/http does
				// instead of spinning or giving up.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !e.track(c) {
			_ = c.Close()
			continue
		}
		go e.handle(c)
	}
}

// track registers c; it reports false when the server is draining.
func (e *tcpEcho) track(c net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.draining {
		return false
	}
	e.conns[c] = struct{}{}
	e.wg.Add(1)
	return true
}

func (e *tcpEcho) isDraining() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.draining
}

// handle echoes c until the peer closes it, an injected error resets it or
// the server drains.
func (e *tcpEcho) handle(c net.Conn) {
	defer e.wg.Done()
	defer func() {
		e.mu.Lock()
		delete(e.conns, c)
		e.mu.Unlock()
	}()
	buf := make([]byte, TCPReadBuffer)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			fail, werr := e.inj.apply(e.ctx)
			if werr != nil {
				_ = c.Close()
				return
			}
			if fail {
				resetClose(c)
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				_ = c.Close()
				return
			}
		}
		if err != nil {
			_ = c.Close()
			return
		}
	}
}

// resetClose closes c with a TCP RST instead of a FIN.
func resetClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// stop closes the listener, then wakes idle connections (a read deadline in
// the past) so each handler finishes the echo in flight and closes. When ctx
// ends first every connection is closed at once.
func (e *tcpEcho) stop(ctx context.Context) error {
	e.mu.Lock()
	e.draining = true
	lerr := e.ln.Close()
	for c := range e.conns {
		_ = c.SetReadDeadline(time.Now())
	}
	e.mu.Unlock()

	finished := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
		e.cancel()
		return lerr
	case <-ctx.Done():
		e.cancel()
		e.mu.Lock()
		for c := range e.conns {
			_ = c.Close()
		}
		e.mu.Unlock()
		<-finished
		return ctx.Err()
	}
}
