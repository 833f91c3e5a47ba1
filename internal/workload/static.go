package workload

import (
	"context"
	_ "embed"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"
)

// nginxIndex is nginx's default index.html (1.21 and later), 615 bytes.
//
//go:embed nginx_index.html
var nginxIndex []byte

// StaticBody returns the static workload's response body for size bytes:
// nginx's default index page when size is DefaultBodySize (615), otherwise
// size bytes of a deterministic printable filler. size must be
// 0..MaxBodySize. The returned slice must not be modified.
func StaticBody(size int) []byte {
	if size == DefaultBodySize {
		return nginxIndex
	}
	const pattern = "meshbench static body 0123456789 abcdefghijklmnopqrstuvwxyz\n"
	b := make([]byte, size)
	for i := 0; i < size; i += copy(b[i:], pattern) {
	}
	return b
}

// Header values shared by every response; net/http only reads them.
var (
	hdrHTML      = []string{"text/html"}
	hdrPlain     = []string{"text/plain; charset=utf-8"}
	healthBody   = []byte("ok\n")
	hdrHealthLen = []string{strconv.Itoa(len(healthBody))}
	errorBody    = []byte(InjectedErrorMessage + "\n")
	hdrErrorLen  = []string{strconv.Itoa(len(errorBody))}
)

// StreamPath is where the static app answers one endless body (GET): the
// server's side of a bulk-throughput load (`meshbench load --bulk`,
// loadgen.StreamPath), written 64 KiB at a time until the client goes
// away. Faults do not apply to it.
const StreamPath = "/stream"

// streamChunk is each write of a stream.
var streamChunk = StaticBody(64 << 10)

var hdrOctet = []string{"application/octet-stream"}

// staticHandler answers every method and path with the same precomputed
// body, like nginx serving its index page; GET/HEAD /healthz answers "ok"
// without faults, and GET StreamPath an endless body.
type staticHandler struct {
	inj       *injector
	body      []byte
	hdrLen    []string
	errStatus int
}

func (h *staticHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		hdr["Content-Type"] = hdrPlain
		hdr["Content-Length"] = hdrHealthLen
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(healthBody)
		return
	}
	if r.URL.Path == StreamPath && r.Method == http.MethodGet {
		hdr["Content-Type"] = hdrOctet
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil {
			if _, err := w.Write(streamChunk); err != nil {
				return
			}
		}
		return
	}
	fail, err := h.inj.apply(r.Context())
	if err != nil {
		return // the client went away or the server is closing
	}
	if fail {
		hdr["Content-Type"] = hdrPlain
		hdr["Content-Length"] = hdrErrorLen
		w.WriteHeader(h.errStatus)
		_, _ = w.Write(errorBody)
		return
	}
	hdr["Content-Type"] = hdrHTML
	hdr["Content-Length"] = h.hdrLen
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(h.body)
}

// startStatic returns the serve loop and the graceful stop of an HTTP/1.1 +
// h2c (prior knowledge) server on ln.
func startStatic(ln net.Listener, cfg Config, inj *injector) (serve func() error, stop func(context.Context) error) {
	body := StaticBody(cfg.BodySize)
	return serveHTTP(ln, &staticHandler{
		inj:       inj,
		body:      body,
		hdrLen:    []string{strconv.Itoa(len(body))},
		errStatus: cfg.Faults.ErrorStatus,
	}, nil)
}

// serveHTTP returns the serve loop and graceful stop of an HTTP/1.1 + h2c
// (prior knowledge) server for h on ln. onStop, if set, runs after the
// server stopped (closing the handler's own clients).
func serveHTTP(ln net.Listener, h http.Handler, onStop func()) (serve func() error, stop func(context.Context) error) {
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: h, Protocols: &protos, ReadHeaderTimeout: 30 * time.Second}
	serve = func() error {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	stop = func(ctx context.Context) error {
		err := hs.Shutdown(ctx)
		if err != nil {
			_ = hs.Close()
		}
		if onStop != nil {
			onStop()
		}
		return err
	}
	return serve, stop
}
