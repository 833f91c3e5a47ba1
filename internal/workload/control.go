package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The control socket (Config.Control) lets whoever runs a server change
// its faults while it runs and read back what it did, out of band: a unix
// socket, so neither a mesh's capture nor its counters ever see it. Its
// HTTP API:
//
//	GET  /delay          the extra delay now, as a Go duration ("200ms")
//	PUT  /delay          body: a duration, 0s to MaxDelay; every answer
//	                     from then on waits that much more (a slow
//	                     replica); answers the delay it replaced
//	GET  /stats          DelayStats since the start or the last reset
//	GET  /stats?reset=1  the same, then starts them again
//
// Control is its client.

// DelayStats are the waits a server's faults and service queue gave its
// answers, as the server measured them: what it was asked for against what
// it did. Health probes never wait and are not counted.
type DelayStats struct {
	// Since is when the stats started: the server's start or the last
	// reset.
	Since time.Time `json:"since"`
	// Answers is how many answers waited.
	Answers int64 `json:"answers"`
	// Measured is each wait from the request's arrival in the handler to
	// the end of its wait; Overshoot is that minus the wait planned (the
	// delays asked and drawn, the queue's service ends). Both in ns.
	Measured  WaitSummary `json:"measured"`
	Overshoot WaitSummary `json:"overshoot"`
	// ExtraDelayNs is the extra delay (PUT /delay) now, in ns.
	ExtraDelayNs int64 `json:"extra_delay_ns"`
}

// WaitSummary summarises waits, in ns; zero without answers.
type WaitSummary struct {
	MinNs  int64   `json:"min_ns"`
	P50Ns  int64   `json:"p50_ns"`
	P90Ns  int64   `json:"p90_ns"`
	P99Ns  int64   `json:"p99_ns"`
	MaxNs  int64   `json:"max_ns"`
	MeanNs float64 `json:"mean_ns"`
}

// delayRecorder keeps the measured waits and overshoots in HDR histograms
// (1 ns to an hour, 3 significant digits), made on the first wait so a
// server without faults holds none.
type delayRecorder struct {
	mu        sync.Mutex
	since     time.Time
	measured  *hdr.Histogram
	overshoot *hdr.Histogram
	// The exact extremes: a histogram's are its buckets' bounds (3
	// digits), which would show a 3 ms wait as 2.998 ms.
	minMeasured, maxMeasured time.Duration
}

// maxRecordedNs bounds a recorded wait: MaxDelay plus the queue's longest
// wait is far beyond what a run lasts; larger values are clamped.
const maxRecordedNs = int64(2 * MaxDelay)

func (r *delayRecorder) reset(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.since = now
	if r.measured != nil {
		r.measured.Reset()
		r.overshoot.Reset()
	}
}

// record adds one answer's wait: planned (above 0) and measured.
func (r *delayRecorder) record(planned, measured time.Duration) {
	over := max(measured-planned, 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.measured == nil {
		r.measured = hdr.New(1, maxRecordedNs, 3)
		r.overshoot = hdr.New(1, maxRecordedNs, 3)
	}
	if r.measured.TotalCount() == 0 || measured < r.minMeasured {
		r.minMeasured = measured
	}
	r.maxMeasured = max(r.maxMeasured, measured)
	_ = r.measured.RecordValue(min(max(int64(measured), 1), maxRecordedNs))
	_ = r.overshoot.RecordValue(min(max(int64(over), 1), maxRecordedNs))
}

// stats are the recorder's figures, then (reset) it starts again.
func (r *delayRecorder) stats(reset bool, now time.Time) DelayStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := DelayStats{Since: r.since}
	if r.measured != nil {
		s.Answers = r.measured.TotalCount()
		s.Measured, s.Overshoot = summary(r.measured), summary(r.overshoot)
		if s.Answers > 0 {
			s.Measured.MinNs, s.Measured.MaxNs = int64(r.minMeasured), int64(r.maxMeasured)
		}
	}
	if reset {
		r.since = now
		if r.measured != nil {
			r.measured.Reset()
			r.overshoot.Reset()
		}
	}
	return s
}

func summary(h *hdr.Histogram) WaitSummary {
	if h.TotalCount() == 0 {
		return WaitSummary{}
	}
	return WaitSummary{MinNs: h.Min(), P50Ns: h.ValueAtQuantile(50), P90Ns: h.ValueAtQuantile(90),
		P99Ns: h.ValueAtQuantile(99), MaxNs: h.Max(), MeanNs: h.Mean()}
}

// controlAddr is the network and address of a control socket: a
// loopback address (127.0.0.1:PORT, [::1]:PORT) is TCP, anything else a
// unix socket's path.
func controlAddr(path string) (network string, loopback bool) {
	if ap, err := netip.ParseAddrPort(path); err == nil && ap.Addr().IsLoopback() {
		return "tcp", true
	}
	return "unix", false
}

// serveControl serves the control API for in on path (controlAddr)
// until stop; addr is where it listens (a loopback port 0 chosen).
func serveControl(path string, in *injector) (addr string, stop func() error, err error) {
	network, _ := controlAddr(path)
	if network == "unix" {
		_ = os.Remove(path)
	}
	ln, err := net.Listen(network, path)
	if err != nil {
		return "", nil, fmt.Errorf("control socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /delay", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, time.Duration(in.extra.Load()))
	})
	mux.HandleFunc("PUT /delay", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64))
		d, err := time.ParseDuration(strings.TrimSpace(string(b)))
		if err != nil || d < 0 || d > MaxDelay {
			http.Error(w, fmt.Sprintf("delay %q: allowed a duration, 0s to %s", strings.TrimSpace(string(b)), MaxDelay), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, in.setExtra(d))
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		s := in.delays.stats(r.URL.Query().Get("reset") == "1", time.Now())
		s.ExtraDelayNs = in.extra.Load()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return ln.Addr().String(), func() error {
		err := hs.Close()
		if network == "unix" {
			_ = os.Remove(path)
		}
		return err
	}, nil
}

// Control is a client of a server's control socket (Config.Control).
type Control struct {
	// Path is the socket's path, or its loopback address (controlAddr).
	Path string
}

func (c Control) client() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			network, _ := controlAddr(c.Path)
			return d.DialContext(ctx, network, c.Path)
		},
		DisableKeepAlives: true,
	}}
}

func (c Control) do(ctx context.Context, method, path, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://app"+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", c.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", c.Path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("control socket %s: %s %s: %s", c.Path, method, path, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// SetDelay makes every answer from now on wait d more (0: no more), and
// returns the extra delay it replaced.
func (c Control) SetDelay(ctx context.Context, d time.Duration) (time.Duration, error) {
	b, err := c.do(ctx, http.MethodPut, "/delay", d.String())
	if err != nil {
		return 0, err
	}
	return time.ParseDuration(strings.TrimSpace(string(b)))
}

// Stats reads the server's DelayStats; reset starts them again.
func (c Control) Stats(ctx context.Context, reset bool) (DelayStats, error) {
	path := "/stats"
	if reset {
		path += "?reset=1"
	}
	b, err := c.do(ctx, http.MethodGet, path, "")
	if err != nil {
		return DelayStats{}, err
	}
	var s DelayStats
	if err := json.Unmarshal(b, &s); err != nil {
		return DelayStats{}, errors.New("control socket " + c.Path + ": " + err.Error())
	}
	return s, nil
}
