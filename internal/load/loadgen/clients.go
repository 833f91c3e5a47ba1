package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// Outcome is what one request produced.
type Outcome struct {
	// Code is the protocol status: the HTTP status, the gRPC code, or
	// tcpOK for a complete TCP echo. 0 with Err set means the request failed
	// below the protocol (refused, reset, timeout, TLS…).
	Code     int
	Err      error
	BytesIn  int64 // response body (HTTP), message payload (gRPC), echo bytes (TCP)
	BytesOut int64 // request body, payload or TCP request bytes
	// arrivedUnixNs is when the kernel received the answer's last bytes
	// (wall clock, ns), where the client can tell (plain-TCP HTTP/1.1);
	// 0: the answer ended when Do returned.
	arrivedUnixNs int64
}

// conn is one worker's connection to one target. Do and Close are called
// by one goroutine only; Abort may be called from any goroutine, at any
// time, also after Close.
type conn interface {
	Do(ctx context.Context, deadline time.Time) Outcome
	Close() error
	// Abort makes the request in flight, and every later Do, fail at once
	// (the run was cancelled). Clients whose Do watches ctx need nothing.
	Abort()
}

// RequestSpec is the request sent on every call.
type RequestSpec struct {
	Method  string      // HTTP method, default GET
	Headers http.Header // extra headers (HTTP and gRPC metadata)
	Host    string      // Host header override (HTTP)
	Body    []byte      // HTTP body, gRPC payload, TCP request bytes
}

// tcpOK is the Code of a complete TCP echo.
const tcpOK = 1

func newConn(t Target, spec RequestSpec, tlsConfig *tls.Config, keepAlive bool) (conn, error) {
	switch t.Protocol {
	case HTTP1:
		return newHTTP1Conn(t, spec, tlsConfig, keepAlive), nil
	case HTTP2:
		return newH2Conn(t, spec, tlsConfig), nil
	case GRPC:
		return newGRPCConn(t, spec, tlsConfig)
	case TCP:
		return &tcpConn{t: t, req: spec.Body, buf: make([]byte, len(spec.Body))}, nil
	}
	return nil, &protocolError{msg: "unknown protocol " + string(t.Protocol)}
}

// h2Conn speaks HTTP/2 (h2c with prior knowledge, or h2 over TLS) on one
// connection through net/http's transport limited to HTTP/2.
type h2Conn struct {
	t      Target
	spec   RequestSpec
	tr     *http.Transport
	client *http.Client
	url    string
	// idPrefix, when set, is Config.RequestIDs; idN the next request's number.
	idPrefix string
	idN      uint64
}

func newH2Conn(t Target, spec RequestSpec, tlsConfig *tls.Config) *h2Conn {
	// HTTP/2 only, never a fallback to HTTP/1.1; strict, so requests beyond
	// the server's stream limit wait on this connection instead of opening
	// another (one worker, one connection).
	var protos http.Protocols
	tr := &http.Transport{DisableCompression: true, Protocols: &protos,
		HTTP2: &http.HTTP2Config{StrictMaxConcurrentRequests: true}}
	scheme := "https"
	if t.TLS {
		protos.SetHTTP2(true)
		tr.TLSClientConfig = clientTLS(tlsConfig, t, "h2")
	} else {
		scheme = "http"
		protos.SetUnencryptedHTTP2(true) // h2c with prior knowledge
	}
	return &h2Conn{t: t, spec: spec, tr: tr, client: &http.Client{Transport: tr},
		url: scheme + "://" + t.Addr + t.Path}
}

func (c *h2Conn) Do(ctx context.Context, deadline time.Time) Outcome {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	method := c.spec.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if len(c.spec.Body) > 0 {
		body = bytes.NewReader(c.spec.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, body)
	if err != nil {
		return Outcome{Err: err}
	}
	for k, vs := range c.spec.Headers {
		req.Header[k] = vs
	}
	if c.spec.Host != "" {
		req.Host = c.spec.Host
	}
	if c.idPrefix != "" {
		req.Header[RequestIDHeader] = []string{RequestID(c.idPrefix, c.idN)}
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return Outcome{Err: err, BytesOut: int64(len(c.spec.Body))}
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return Outcome{Err: err, BytesIn: n, BytesOut: int64(len(c.spec.Body))}
	}
	return Outcome{Code: resp.StatusCode, BytesIn: n, BytesOut: int64(len(c.spec.Body))}
}

// Abort: the request's context is the run's, so cancelling it is enough.
func (c *h2Conn) Abort() {}

func (c *h2Conn) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// grpcConn makes unary calls to grpc.testing.TestService/UnaryCall (the
// standard gRPC test service that `meshbench serve grpc` implements) over one
// client connection.
type grpcConn struct {
	cc     *grpc.ClientConn
	client testpb.TestServiceClient
	req    *testpb.SimpleRequest
	md     []string
	mdNoID []string // md without a user's x-request-id: the run's ids replace it
	out    int64
	// idPrefix, when set, is Config.RequestIDs; idN the next request's number.
	idPrefix string
	idN      uint64
}

func newGRPCConn(t Target, spec RequestSpec, tlsConfig *tls.Config) (*grpcConn, error) {
	creds := insecure.NewCredentials()
	if t.TLS {
		creds = credentials.NewTLS(tlsConfig)
	}
	cc, err := grpc.NewClient("passthrough:///"+t.Addr, grpc.WithTransportCredentials(creds),
		grpc.WithAuthority(t.Host))
	if err != nil {
		return nil, err
	}
	var md, mdNoID []string
	for k, vs := range spec.Headers {
		for _, v := range vs {
			md = append(md, k, v)
			if http.CanonicalHeaderKey(k) != RequestIDHeader {
				mdNoID = append(mdNoID, k, v)
			}
		}
	}
	return &grpcConn{cc: cc, client: testpb.NewTestServiceClient(cc),
		req: &testpb.SimpleRequest{Payload: &testpb.Payload{Body: spec.Body}}, md: md, mdNoID: mdNoID, out: int64(len(spec.Body))}, nil
}

func (c *grpcConn) Do(ctx context.Context, deadline time.Time) Outcome {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if c.idPrefix != "" {
		ctx = metadataContext(ctx, append(c.mdNoID[:len(c.mdNoID):len(c.mdNoID)], "x-request-id", RequestID(c.idPrefix, c.idN)))
	} else if len(c.md) > 0 {
		ctx = metadataContext(ctx, c.md)
	}
	resp, err := c.client.UnaryCall(ctx, c.req, grpc.WaitForReady(false))
	if err != nil {
		s, _ := status.FromError(err)
		return Outcome{Code: int(s.Code()), Err: err, BytesOut: c.out}
	}
	return Outcome{Code: 0, BytesIn: int64(len(resp.GetPayload().GetBody())), BytesOut: c.out}
}

func (c *grpcConn) Close() error { return c.cc.Close() }

// Abort: the call's context is the run's, so cancelling it is enough.
func (c *grpcConn) Abort() {}

// tcpConn writes a fixed request and reads the same number of bytes back
// (the echo of `meshbench serve tcp`).
type tcpConn struct {
	t    Target
	req  []byte
	buf  []byte
	conn net.Conn
	abortable
}

func (c *tcpConn) Do(ctx context.Context, deadline time.Time) Outcome {
	if c.aborted() {
		return Outcome{Err: context.Canceled}
	}
	if c.conn == nil {
		d := net.Dialer{Deadline: deadline}
		conn, err := d.DialContext(ctx, "tcp", c.t.Addr)
		if err != nil {
			return Outcome{Err: err}
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		c.conn = conn
		c.watch(conn)
	}
	_ = c.conn.SetDeadline(deadline)
	if c.aborted() { // Abort ran before this deadline replaced its own
		c.Close()
		return Outcome{Err: context.Canceled}
	}
	out := int64(len(c.req))
	if _, err := c.conn.Write(c.req); err != nil {
		c.Close()
		return Outcome{Err: err, BytesOut: out}
	}
	n, err := io.ReadFull(c.conn, c.buf)
	if err != nil {
		c.Close()
		return Outcome{Err: err, BytesIn: int64(n), BytesOut: out}
	}
	return Outcome{Code: tcpOK, BytesIn: int64(n), BytesOut: out}
}

func (c *tcpConn) Close() error {
	if c.conn == nil {
		return nil
	}
	c.watch(nil)
	err := c.conn.Close()
	c.conn = nil
	return err
}

// abortable lets another goroutine cut short the blocking reads and writes
// of a client that honours only deadlines (the raw HTTP/1.1 and TCP
// clients): Abort sets a deadline in the past on the current connection.
// The owner calls watch when it opens or drops its connection (rarely, so
// the lock costs nothing per request) and checks aborted after every
// SetDeadline of its own, which would otherwise replace Abort's.
type abortable struct {
	mu   sync.Mutex
	cur  net.Conn
	stop atomic.Bool
}

func (a *abortable) watch(c net.Conn) {
	a.mu.Lock()
	a.cur = c
	a.mu.Unlock()
	if c != nil && a.stop.Load() {
		_ = c.SetDeadline(pastDeadline)
	}
}

// Abort is the conn interface's.
func (a *abortable) Abort() {
	a.stop.Store(true)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur != nil {
		_ = a.cur.SetDeadline(pastDeadline)
	}
}

func (a *abortable) aborted() bool { return a.stop.Load() }

// pastDeadline makes every pending and later read or write fail at once.
var pastDeadline = time.Unix(1, 0)

// clientTLS copies cfg for one target: SNI and verified name default to the
// target's host, ALPN offers proto.
func clientTLS(cfg *tls.Config, t Target, proto string) *tls.Config {
	c := cfg.Clone()
	if c.ServerName == "" {
		c.ServerName = t.Host
	}
	c.NextProtos = []string{proto}
	return c
}
