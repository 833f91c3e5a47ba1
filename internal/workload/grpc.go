package workload

import (
	"context"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// GRPCServiceName is the full name of the gRPC test service the grpc
// workload serves; the health service reports it SERVING.
const GRPCServiceName = "grpc.testing.TestService"

// MaxGRPCResponseSize is the largest SimpleRequest.response_size UnaryCall
// honours (64 MiB); larger requests get codes.InvalidArgument.
const MaxGRPCResponseSize = 64 << 20

// InjectedErrorMessage is the message of injected gRPC errors (code
// Unavailable) and the body of injected HTTP errors (plus a newline).
const InjectedErrorMessage = "meshbench: injected error"

// zeroPayload backs response payloads up to its size without allocating;
// protobuf marshalling only reads it.
var zeroPayload [64 << 10]byte

// testService implements grpc.testing.TestService's unary calls.
type testService struct {
	testgrpc.UnimplementedTestServiceServer
}

// EmptyCall returns Empty.
func (testService) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

// UnaryCall echoes the request payload when response_size is 0, otherwise
// answers response_size zero bytes.
func (testService) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	n := req.GetResponseSize()
	switch {
	case n == 0:
		return &testgrpc.SimpleResponse{Payload: req.GetPayload()}, nil
	case n < 0 || n > MaxGRPCResponseSize:
		return nil, status.Errorf(codes.InvalidArgument, "response_size %d: want 0 (echo) up to %d bytes", n, MaxGRPCResponseSize)
	}
	var body []byte
	if int(n) <= len(zeroPayload) {
		body = zeroPayload[:n]
	} else {
		body = make([]byte, n)
	}
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Type: req.GetResponseType(), Body: body}}, nil
}

// faultInterceptor applies inj to every unary call except the health
// service's.
func faultInterceptor(inj *injector) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, "/grpc.health.v1.Health/") {
			return handler(ctx, req)
		}
		fail, err := inj.apply(ctx)
		if err != nil {
			return nil, status.FromContextError(err).Err()
		}
		if fail {
			return nil, status.Error(codes.Unavailable, InjectedErrorMessage)
		}
		return handler(ctx, req)
	}
}

// startGRPC returns the serve loop and the graceful stop of the gRPC
// workload on ln.
func startGRPC(ln net.Listener, inj *injector) (serve func() error, stop func(context.Context) error) {
	var opts []grpc.ServerOption
	if inj.active {
		opts = append(opts, grpc.UnaryInterceptor(faultInterceptor(inj)))
	}
	gs := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(gs, testService{})
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(GRPCServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)

	tl := &trackingListener{Listener: ln, conns: make(map[*trackedConn]struct{})}
	serve = func() error { return gs.Serve(tl) }
	stop = func(ctx context.Context) error {
		hs.Shutdown() // report NOT_SERVING while draining
		stopped := make(chan struct{})
		go func() {
			gs.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
			return nil
		case <-ctx.Done():
			// Stop waits for connections still in the HTTP/2 handshake
			// (up to 120s for a client that never sends the preface), so
			// close every accepted connection ourselves first.
			tl.closeAll()
			gs.Stop()
			<-stopped
			return ctx.Err()
		}
	}
	return serve, stop
}

// trackingListener remembers the connections it accepted until they are
// closed, so a forced stop can close them all.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[*trackedConn]struct{} // guarded by mu
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

// closeAll closes every connection accepted and not yet closed.
func (l *trackingListener) closeAll() {
	l.mu.Lock()
	conns := make([]*trackedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

type trackedConn struct {
	net.Conn
	l    *trackingListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
