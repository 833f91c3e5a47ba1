package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"
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
}

// conn is one worker's connection to one target. It is used by one
// goroutine only.
type conn interface {
	Do(ctx context.Context, deadline time.Time) Outcome
	Close() error
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
// connection through x/net/http2's transport.
type h2Conn struct {
	t      Target
	spec   RequestSpec
	tr     *http2.Transport
	client *http.Client
	url    string
}

func newH2Conn(t Target, spec RequestSpec, tlsConfig *tls.Config) *h2Conn {
	tr := &http2.Transport{DisableCompression: true, StrictMaxConcurrentStreams: true}
	scheme := "https"
	if t.TLS {
		tr.TLSClientConfig = clientTLS(tlsConfig, t, "h2")
	} else {
		scheme = "http"
		tr.AllowHTTP = true
		tr.DialTLSContext = func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
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
	out    int64
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
	var md []string
	for k, vs := range spec.Headers {
		for _, v := range vs {
			md = append(md, k, v)
		}
	}
	return &grpcConn{cc: cc, client: testpb.NewTestServiceClient(cc),
		req: &testpb.SimpleRequest{Payload: &testpb.Payload{Body: spec.Body}}, md: md, out: int64(len(spec.Body))}, nil
}

func (c *grpcConn) Do(ctx context.Context, deadline time.Time) Outcome {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if len(c.md) > 0 {
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

// tcpConn writes a fixed request and reads the same number of bytes back
// (the echo of `meshbench serve tcp`).
type tcpConn struct {
	t    Target
	req  []byte
	buf  []byte
	conn net.Conn
}

func (c *tcpConn) Do(ctx context.Context, deadline time.Time) Outcome {
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
	}
	_ = c.conn.SetDeadline(deadline)
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
	err := c.conn.Close()
	c.conn = nil
	return err
}

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
