package workload

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

// FaceColorSize is the payload size `face` asks `color` for on every
// request (a colour code, as the Faces demo's color service returns).
const FaceColorSize = 7

// faceHandler is the Faces-like front workload: for every request it calls
// `smiley` over HTTP and `color` over gRPC, then answers with what it got.
// The smiley backend is a static workload, the color backend a grpc one, each
// its own process with its own replicas (and, in sidecar mode, its own
// sidecar), as in the Faces demo the seed benchmarks use.
type faceHandler struct {
	inj    *injector
	client *http.Client
	smiley string
	color  testgrpc.TestServiceClient
}

func (h *faceHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		w.Header()["Content-Type"] = hdrPlain
		_, _ = w.Write(healthBody)
		return
	}
	fail, err := h.inj.apply(r.Context())
	if err != nil {
		return
	}
	if fail {
		http.Error(w, InjectedErrorMessage, http.StatusInternalServerError)
		return
	}
	// Forward the request's id to both backends, as Istio asks apps to
	// (its proxies then log one id along the whole call tree).
	id := r.Header.Get("X-Request-Id")
	smileyBytes, err := h.callSmiley(r.Context(), id)
	if err != nil {
		http.Error(w, "face: smiley: "+err.Error(), http.StatusBadGateway)
		return
	}
	cctx := r.Context()
	if id != "" {
		cctx = metadata.AppendToOutgoingContext(cctx, "x-request-id", id)
	}
	resp, err := h.color.UnaryCall(cctx, &testgrpc.SimpleRequest{ResponseSize: FaceColorSize})
	if err != nil {
		http.Error(w, "face: color: "+err.Error(), http.StatusBadGateway)
		return
	}
	body := `{"smiley_bytes":` + strconv.FormatInt(smileyBytes, 10) + `,"color_bytes":` + strconv.Itoa(len(resp.GetPayload().GetBody())) + "}\n"
	w.Header()["Content-Type"] = []string{"application/json"}
	w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	_, _ = io.WriteString(w, body)
}

func (h *faceHandler) callSmiley(ctx context.Context, requestID string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.smiley, nil)
	if err != nil {
		return 0, err
	}
	if requestID != "" {
		req.Header["X-Request-Id"] = []string{requestID}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, err
	}
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("status %d", resp.StatusCode)
	}
	return n, nil
}

// checkFace validates the face workload's backends.
func checkFace(c Config) []error {
	var errs []error
	u, err := url.Parse(c.SmileyURL)
	if c.SmileyURL == "" || err != nil || u.Scheme != "http" || u.Host == "" {
		errs = append(errs, &ConfigError{Field: "smiley-url", Value: strconv.Quote(c.SmileyURL), Want: "allowed: the smiley backend's http://HOST:PORT/ URL"})
	}
	if err := checkHostPort(c.ColorAddr); c.ColorAddr == "" || err != nil {
		errs = append(errs, &ConfigError{Field: "color-addr", Value: strconv.Quote(c.ColorAddr), Want: "allowed: the color backend's gRPC host:port"})
	}
	return errs
}

// startFace returns the serve loop and graceful stop of the face workload.
func startFace(ln net.Listener, cfg Config, inj *injector) (serve func() error, stop func(context.Context) error, err error) {
	cc, err := grpc.NewClient("passthrough:///"+cfg.ColorAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("face: color backend %s: %w", cfg.ColorAddr, err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	h := &faceHandler{inj: inj, client: &http.Client{Transport: tr, Timeout: 30 * time.Second},
		smiley: cfg.SmileyURL, color: testgrpc.NewTestServiceClient(cc)}
	serve, stop = serveHTTP(ln, h, func() {
		tr.CloseIdleConnections()
		_ = cc.Close()
	})
	return serve, stop, nil
}
