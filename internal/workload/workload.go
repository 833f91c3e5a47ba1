// Package workload holds meshbench's built-in workloads: real servers that a
// benchmark targets, each run as its own process by `meshbench serve`.
//
//   - static: an HTTP/1.1 and h2c server answering every request with a fixed
//     body (by default nginx's 615-byte welcome page).
//   - grpc: the standard gRPC interop TestService plus the health service.
//   - tcp: an L4 echo server.
//   - face: a Faces-like front that calls smiley (HTTP) and color (gRPC)
//     for every request.
//
// Every workload can inject Faults: fixed and random delays, periodic stalls
// and errors.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"time"
)

// Kind names a built-in workload.
type Kind string

// The built-in workloads.
const (
	KindStatic Kind = "static" // HTTP/1.1 + h2c fixed-body server
	KindGRPC   Kind = "grpc"   // gRPC interop TestService + health service
	KindTCP    Kind = "tcp"    // L4 echo server
	KindFace   Kind = "face"   // Faces-like front: calls smiley (HTTP) and color (gRPC) per request
)

// Kinds lists every Kind, in the order help texts show them.
var Kinds = []Kind{KindStatic, KindGRPC, KindTCP, KindFace}

// Defaults applied by Start to zero Config fields.
const (
	DefaultListen   = "127.0.0.1:8080"
	DefaultBodySize = 615 // bytes: nginx's default index page
)

// maxSocketPath is the longest unix socket path Linux takes.
const maxSocketPath = 107

// MaxBodySize is the largest static response body (64 MiB); the body is held
// in memory.
const MaxBodySize = 64 << 20

// Config describes one workload server.
type Config struct {
	// Kind selects the workload.
	Kind Kind
	// Listen is the host:port to bind; "" means DefaultListen. Port 0 picks
	// a free port (see Server.Addr).
	Listen string
	// BodySize is the static workload's response body in bytes,
	// 0..MaxBodySize; 0 means DefaultBodySize. Other kinds ignore it.
	BodySize int
	// Faults are injected into every answer except health probes.
	Faults Faults
	// SmileyURL is the face workload's HTTP backend (a static workload),
	// e.g. http://127.0.2.11:8080/. Other kinds ignore it.
	SmileyURL string
	// ColorAddr is the face workload's gRPC backend (a grpc workload),
	// host:port. Other kinds ignore it.
	ColorAddr string
	// Concurrency bounds the server: at most this many requests (0..
	// MaxConcurrency; 0: no bound) are served at once, each for exactly
	// ServiceTime, the others queued in arrival order. Its capacity is
	// then exactly Concurrency/ServiceTime requests per second: a known
	// answer for capacity searches. Health probes are exempt; faults apply
	// after the service time.
	Concurrency int
	// ServiceTime is each request's time in service when Concurrency is
	// set, above 0 and at most MaxDelay; it must be 0 without Concurrency.
	ServiceTime time.Duration
	// Control, when not empty, is the path of a unix socket on which the
	// server takes a delay to add to every answer while it runs and tells
	// the waits it measured (control.go: a slow replica, the app's own
	// measure of its delays), or a loopback address (127.0.0.1:PORT,
	// [::1]:PORT: in a pod, reached by a port-forward). "" serves none.
	Control string
}

// Capacity returns the requests per second a server bounded by
// Concurrency and ServiceTime answers at most (Concurrency/ServiceTime),
// or 0 for an unbounded server.
func (c Config) Capacity() float64 {
	if c.Concurrency <= 0 || c.ServiceTime <= 0 {
		return 0
	}
	return float64(c.Concurrency) / c.ServiceTime.Seconds()
}

// ConfigError is one problem found by Config.Validate. Field names the input
// as `meshbench serve` spells its flag ("listen", "stall-for", …), or "kind"
// for the workload kind.
type ConfigError struct {
	Field string // input name, e.g. "error-ratio"
	Value string // the rejected value as the user would write it
	Want  string // what is allowed, e.g. "allowed: 0 to 1"
}

// Error returns one line: "FIELD VALUE: WANT".
func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Field, e.Value, e.Want)
}

// Validate reports every problem with c at once (joined with errors.Join;
// each one a *ConfigError on one line), or nil.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, value, want string) {
		errs = append(errs, &ConfigError{Field: field, Value: value, Want: want})
	}
	switch c.Kind {
	case KindStatic, KindGRPC, KindTCP:
	case KindFace:
		errs = append(errs, checkFace(c)...)
	default:
		bad("kind", strconv.Quote(string(c.Kind)), "allowed: static, grpc, tcp, face")
	}
	if c.Listen != "" {
		if err := checkHostPort(c.Listen); err != nil {
			bad("listen", strconv.Quote(c.Listen), err.Error())
		}
	}
	if _, loopback := controlAddr(c.Control); !loopback && len(c.Control) > maxSocketPath {
		bad("control", strconv.Quote(c.Control), fmt.Sprintf("allowed: a path of at most %d bytes (a unix socket's), or a loopback address 127.0.0.1:PORT", maxSocketPath))
	}
	if c.BodySize < 0 || c.BodySize > MaxBodySize {
		bad("body-size", strconv.Itoa(c.BodySize), fmt.Sprintf("allowed: 0 (default, %d) to %d bytes", DefaultBodySize, MaxBodySize))
	}
	f := c.Faults
	if f.Delay < 0 || f.Delay > MaxDelay {
		bad("delay", f.Delay.String(), "allowed: 0s to 1h")
	}
	if f.StallEvery < 0 || f.StallEvery > MaxDelay {
		bad("stall-every", f.StallEvery.String(), "allowed: 0s (off) to 1h")
	}
	switch {
	case f.StallFor < 0:
		bad("stall-for", f.StallFor.String(), "allowed: 0s (off) or more, shorter than stall-every")
	case f.StallFor > 0 && f.StallEvery == 0:
		bad("stall-for", f.StallFor.String(), "needs stall-every too (the stall period)")
	case f.StallFor == 0 && f.StallEvery > 0:
		bad("stall-every", f.StallEvery.String(), "needs stall-for too (how long each stall lasts)")
	case f.StallFor > 0 && f.StallFor >= f.StallEvery:
		bad("stall-for", f.StallFor.String(), fmt.Sprintf("must be shorter than stall-every %s", f.StallEvery))
	}
	switch {
	case c.Concurrency < 0 || c.Concurrency > MaxConcurrency:
		bad("concurrency", strconv.Itoa(c.Concurrency), fmt.Sprintf("allowed: 0 (no bound) to %d requests served at once", MaxConcurrency))
	case c.Concurrency > 0 && (c.ServiceTime <= 0 || c.ServiceTime > MaxDelay):
		bad("service-time", c.ServiceTime.String(), "allowed: above 0s, at most 1h, with concurrency (each request's time in service)")
	case c.Concurrency == 0 && c.ServiceTime != 0:
		bad("service-time", c.ServiceTime.String(), "needs concurrency too (how many requests are served at once)")
	}
	if math.IsNaN(f.ErrorRatio) || f.ErrorRatio < 0 || f.ErrorRatio > 1 {
		bad("error-ratio", strconv.FormatFloat(f.ErrorRatio, 'g', -1, 64), "allowed: 0 to 1 (fraction of requests)")
	}
	if f.ErrorStatus != 0 && (f.ErrorStatus < 400 || f.ErrorStatus > 599) {
		bad("error-status", strconv.Itoa(f.ErrorStatus), "allowed: an HTTP error status, 400 to 599")
	}
	return errors.Join(errs...)
}

// checkHostPort accepts "host:port" with a numeric port 0..65535.
func checkHostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("allowed: host:port, e.g. 127.0.0.1:8080")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return errors.New("allowed: host:port with a numeric port 0 to 65535")
	}
	return nil
}

// withDefaults fills zero fields with their defaults.
func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.BodySize == 0 {
		c.BodySize = DefaultBodySize
	}
	if c.Faults.ErrorStatus == 0 {
		c.Faults.ErrorStatus = DefaultErrorStatus
	}
	return c
}

// Server is a running workload.
type Server struct {
	kind Kind
	addr string
	// controlAddr is where the control API listens ("" without one).
	controlAddr string
	started     time.Time

	done     chan struct{} // closed when the accept loop ends
	err      error         // why it ended; set before done is closed
	stopOnce sync.Once
	stopErr  error
	stop     func(context.Context) error
	inj      *injector
}

// Start validates cfg, binds its listener and serves in the background. It
// returns once the listener is bound, so connections are accepted from then
// on. ctx bounds only the start; the server runs until Shutdown.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("starting %s workload: %w", cfg.Kind, err)
	}
	s := &Server{
		kind:    cfg.Kind,
		addr:    ln.Addr().String(),
		started: time.Now(),
		done:    make(chan struct{}),
	}
	inj := newInjector(cfg.Faults, newServiceQueue(cfg.Concurrency, cfg.ServiceTime), s.started)
	s.inj = inj
	var stopControl func() error
	if cfg.Control != "" {
		// A delay may come later: the faults' path is taken from the start.
		inj.active = true
		if s.controlAddr, stopControl, err = serveControl(cfg.Control, inj); err != nil {
			ln.Close()
			return nil, err
		}
	}
	var serve func() error
	switch cfg.Kind {
	case KindStatic:
		serve, s.stop = startStatic(ln, cfg, inj)
	case KindGRPC:
		serve, s.stop = startGRPC(ln, inj)
	case KindTCP:
		serve, s.stop = startTCP(ln, inj)
	case KindFace:
		serve, s.stop, err = startFace(ln, cfg, inj)
		if err != nil {
			ln.Close()
			if stopControl != nil {
				_ = stopControl()
			}
			return nil, err
		}
	}
	if stopControl != nil {
		stopApp := s.stop
		s.stop = func(ctx context.Context) error { return errors.Join(stopApp(ctx), stopControl()) }
	}
	go func() {
		s.err = serve()
		close(s.done)
	}()
	return s, nil
}

// Delays are the waits the server's faults and queue gave its answers so
// far, as it measured them (DelayStats); the extra delay is the control
// socket's.
func (s *Server) Delays() DelayStats {
	d := s.inj.delays.stats(false, time.Now())
	d.ExtraDelayNs = s.inj.extra.Load()
	return d
}

// Addr returns the bound address as host:port (the real port when Config
// asked for port 0).
func (s *Server) Addr() string { return s.addr }

// ControlAddr is where the server's control API listens (Config.Control;
// a loopback port 0 resolved), "" without one.
func (s *Server) ControlAddr() string { return s.controlAddr }

// Kind returns the workload kind.
func (s *Server) Kind() Kind { return s.kind }

// Started returns when the listener was bound. Stall windows are counted from
// this instant (it carries a monotonic clock reading).
func (s *Server) Started() time.Time { return s.started }

// Done is closed when the server stops accepting connections, either because
// Shutdown was called or because accepting failed (see Err).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err returns why the server stopped accepting: nil after Shutdown, the
// accept error otherwise. Call it after Done is closed.
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Shutdown stops the server gracefully: it stops accepting, lets in-flight
// requests finish (delays included) and closes idle connections. When ctx
// ends first it closes every connection at once and returns ctx's error.
// Calls after the first return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stopErr = s.stop(ctx)
		<-s.done
	})
	return s.stopErr
}
