package loadgen

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
)

// StreamPath is the path at which `meshbench serve static` answers one
// endless body, the server's side of Bulk: the lab's bulk cells ask for it.
const StreamPath = "/stream"

// bulkReadBuffer is each bulk connection's read size.
const bulkReadBuffer = 64 << 10

// runBulk runs a Bulk load: every connection sends one GET and reads its
// answer's body as fast as it can from the start of the warm-up to the end
// of the measured window, when the connection is closed. A stream that
// ends or fails before the window's end is an error (it is not reopened:
// netperf's TCP_STREAM keeps one connection too). What counts is the body
// bytes that arrived within the window (Result.BytesIn); the latency
// histograms hold each stream's time to its first answer byte from its
// send. HTTP/1.1 targets only (Validate).
func runBulk(ctx context.Context, cfg Config, now func() time.Time) (*Result, error) {
	start, startWall := time.Now(), now()
	warm, end := cfg.Warmup, cfg.Warmup+cfg.Duration
	res := &Result{Config: cfg, Start: startWall.Add(warm), Codes: map[int]int64{}, Errors: map[ErrorKey]int64{},
		Latency: latency.NewRecorder(), ServiceTime: latency.NewRecorder(), ScheduleLag: latency.NewRecorder(),
		ConnectionsN: cfg.Connections}
	var mu sync.Mutex // guards res
	first := int64(math.MaxInt64)
	var wg sync.WaitGroup
	for i := range cfg.Connections {
		t := cfg.Targets[i%len(cfg.Targets)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := bulkStream(ctx, t, cfg, start, warm, end)
			mu.Lock()
			defer mu.Unlock()
			res.Sent++
			first = min(first, int64(st.sent))
			res.LastSend = max(res.LastSend, st.sent)
			res.BytesIn += st.inWindow
			res.BytesOut += st.out
			if st.err != nil && ctx.Err() != nil {
				res.Canceled++
				return
			}
			res.Completed++
			res.LastEnd = max(res.LastEnd, st.ended)
			res.Codes[st.code]++
			res.Latency.Record(int64(st.firstByte))
			res.ServiceTime.Record(int64(st.firstByte))
			res.ScheduleLag.Record(0)
			if st.err == nil {
				res.Success++
				return
			}
			k := ErrorKey{Kind: ClassifyError(st.err), Message: normalizeError(st.err)}
			if st.code != 0 && st.code != http.StatusOK {
				k = ErrorKey{Kind: KindStatus, Message: StatusError(st.code)}
			}
			res.Errors[k]++
		}()
	}
	wg.Wait()
	res.Interrupted = ctx.Err() != nil
	if res.Sent > 0 {
		res.FirstSend = max(time.Duration(first)-warm, 0)
	}
	res.LastSend = max(res.LastSend-warm, 0)
	res.LastEnd = max(res.LastEnd-warm, 0)
	res.End = res.Start.Add(res.LastEnd)
	return res, nil
}

// bulkResult is what one bulk connection did; times since the run's start.
type bulkResult struct {
	sent, ended, firstByte time.Duration
	code                   int
	inWindow, out          int64
	err                    error
}

// bulkStream opens one connection to t, asks for the stream and reads it
// until the window's end.
func bulkStream(ctx context.Context, t Target, cfg Config, start time.Time, warm, end time.Duration) (r bulkResult) {
	since := func() time.Duration { return time.Since(start) }
	r.sent = since()
	defer func() { r.ended = since() }()
	headBy := start.Add(r.sent + cfg.Timeout)
	dctx, cancel := context.WithDeadline(ctx, headBy)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", t.Addr)
	if err != nil {
		r.err = err
		r.firstByte = since() - r.sent
		return r
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(pastDeadline) })
	defer stop()
	defer conn.Close()
	if t.TLS {
		tc := tls.Client(conn, clientTLS(cfg.TLS, t, "http/1.1"))
		if err := tc.HandshakeContext(dctx); err != nil {
			r.err = err
			r.firstByte = since() - r.sent
			return r
		}
		conn = tc
	}
	_ = conn.SetDeadline(headBy)
	if ctx.Err() != nil {
		r.err = ctx.Err()
		return r
	}
	req := serializeHTTP1(t, cfg.Request, true)
	r.out = int64(len(cfg.Request.Body))
	if _, err := conn.Write(req); err != nil {
		r.err = err
		r.firstByte = since() - r.sent
		return r
	}
	br := bufio.NewReaderSize(conn, bulkReadBuffer)
	resp, err := http.ReadResponse(br, nil)
	r.firstByte = since() - r.sent
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	r.code = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		r.err = fmt.Errorf("bulk stream: %s", StatusError(resp.StatusCode))
		return r
	}
	// The window's end ends every read; an interrupt sets a past deadline.
	_ = conn.SetDeadline(start.Add(end))
	if ctx.Err() != nil {
		r.err = ctx.Err()
		return r
	}
	buf := make([]byte, bulkReadBuffer)
	for {
		n, err := resp.Body.Read(buf)
		if at := since(); n > 0 && at >= warm && at < end {
			r.inWindow += int64(n)
		}
		if err == nil {
			continue
		}
		switch {
		case ctx.Err() != nil:
			r.err = ctx.Err()
		case errors.Is(err, os.ErrDeadlineExceeded) && since() >= end:
			// The measured window is over: the stream did its job.
		case errors.Is(err, io.EOF):
			r.err = errors.New("bulk stream: the answer ended before the measured window did: ask for an endless answer (serve static's " + StreamPath + ")")
		default:
			r.err = err
		}
		return r
	}
}
