// Package loadgen is meshbench's load engine: an open-loop, constant-rate
// generator whose latencies are measured from each request's intended send
// time (no coordinated omission), and a closed-loop mode for comparison.
//
// Shape: a pure Pacer decides when request n is due; one pacing goroutine
// hands tickets (n, intended time) to a bounded queue; a fixed pool of C
// workers, one keep-alive connection each, takes tickets as they become
// free. When the queue is full the ticket is dropped and counted. No worker
// is ever added and no catch-up burst is ever sent beyond the queue.
package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
)

// DefaultConnections is the number of connections a load spreads over when
// none is given: `meshbench load`, `run` and `bench` flags, plans, and both
// platforms' options use it.
const DefaultConnections = 16

// Config is one load run.
type Config struct {
	Targets     []Target      // at least one; all of one protocol; spread over connections round-robin
	Load        Load          // OpenLoop(rate), or ClosedLoop: each connection sends when its last answer arrives
	Duration    time.Duration // measured window, > 0
	Warmup      time.Duration // load before the measured window, not counted; >= 0
	Timeout     time.Duration // per request, from its actual send; > 0
	Connections int           // worker connections, >= len(Targets)
	MaxQueue    int           // tickets waiting for a free connection before drops; >= 0
	Request     RequestSpec
	TLS         *tls.Config // for https, grpcs and h2 over TLS
	KeepAlive   bool        // reuse connections (HTTP/1.1); default true in the CLI
	// RequestsPerConnection closes each connection after this many
	// requests, the next one opening a new connection (HTTP/1.1 and TCP
	// targets): 1 is a new connection per request (netperf's TCP_CRR), 0
	// keeps every connection for the whole run.
	RequestsPerConnection int
	// Arrivals spaces an open loop's requests: ArrivalsConstant ("" too)
	// or ArrivalsPoisson, drawn from Seed (recorded in the result, so a
	// schedule can be replayed).
	Arrivals Arrivals
	Seed     uint64
	// SendTick, when > 0, lets an open loop's pacer wake at most once per
	// tick and send every request due by then together (see Pacer.Tick);
	// 0 (the default) sends each request at its own time.
	SendTick time.Duration

	// Progress, if set, is called from a separate goroutine every
	// ProgressInterval (default 1 s) with figures so far.
	Progress         func(Progress)
	ProgressInterval time.Duration
	// Interval, if > 0, also records the three histograms per interval of
	// the measured window, by the time each answer arrived (HdrHistogram's
	// interval-log convention): Result.Intervals. 0 records none.
	Interval time.Duration
	// RequestIDs, when not "", gives every HTTP request (and gRPC call) an
	// X-Request-Id header (metadata): RequestID(RequestIDs, n) for request
	// number n, so proxies on the path can log it and their records be
	// joined per request (see CheckRequestIDPrefix). TCP requests carry
	// none.
	RequestIDs string
	// OnRequest, when not nil, is called after every request that was sent
	// (warm-up included, see RequestRecord.Measured), from the worker
	// goroutines concurrently: it must be safe for that, and quick, as it
	// runs on the request path.
	OnRequest func(RequestRecord)
	// Now is the clock; nil means time.Now. Only the wall-clock stamps in the
	// result come from it; intervals use the monotonic clock of time.Now.
	Now func() time.Time
}

// Validate returns every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("no target given: pass at least one URL such as http://127.0.0.1:8080/"))
	}
	for _, t := range c.Targets[min(1, len(c.Targets)):] {
		if t.Protocol != c.Targets[0].Protocol {
			errs = append(errs, fmt.Errorf("target %q speaks %s but %q speaks %s: all targets must use one protocol", t.Raw, t.Protocol, c.Targets[0].Raw, c.Targets[0].Protocol))
		}
	}
	if r := c.Load.Rate(); !c.Load.Closed() && !c.Load.Bulk() && (r.Freq == 0 || r.Per <= 0) {
		errs = append(errs, errors.New("rate must be > 0 (or use closed-loop --max)"))
	}
	if c.Load.Bulk() && len(c.Targets) > 0 && c.Targets[0].Protocol != HTTP1 {
		errs = append(errs, fmt.Errorf("bulk load: applies to http:// and https:// targets (HTTP/1.1), not %s", c.Targets[0].Protocol))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: must be > 0", c.Duration))
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warmup %v: must be >= 0", c.Warmup))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %v: must be > 0", c.Timeout))
	}
	if c.Connections < 1 {
		errs = append(errs, fmt.Errorf("connections %d: must be >= 1", c.Connections))
	} else if c.Connections < len(c.Targets) {
		errs = append(errs, fmt.Errorf("connections %d: fewer than the %d targets; allowed: >= %d", c.Connections, len(c.Targets), len(c.Targets)))
	}
	if c.RequestIDs != "" {
		if err := CheckRequestIDPrefix(c.RequestIDs); err != nil {
			errs = append(errs, err)
		}
	}
	if c.RequestsPerConnection < 0 {
		errs = append(errs, fmt.Errorf("requests per connection %d: allowed: 0 (keep every connection) or more", c.RequestsPerConnection))
	} else if c.RequestsPerConnection > 0 && len(c.Targets) > 0 && c.Targets[0].Protocol != HTTP1 && c.Targets[0].Protocol != TCP {
		errs = append(errs, fmt.Errorf("requests per connection %d: applies to http/1.1 and tcp targets, not %s", c.RequestsPerConnection, c.Targets[0].Protocol))
	}
	switch c.Arrivals {
	case "", ArrivalsConstant:
	case ArrivalsPoisson:
		if c.Load.Closed() {
			errs = append(errs, errors.New("arrivals poisson: a closed loop sends when answers arrive, it has no schedule to space"))
		}
	default:
		errs = append(errs, fmt.Errorf("arrivals %q: allowed: %s", c.Arrivals, strings.Join(ArrivalsNames, ", ")))
	}
	if err := ValidateSendTick(c.SendTick); err != nil {
		errs = append(errs, err)
	} else if c.SendTick > 0 && (c.Load.Closed() || c.Load.Bulk()) {
		errs = append(errs, errors.New("send-tick: applies to an open loop's schedule, not to a closed loop or bulk"))
	}
	if c.MaxQueue < 0 {
		errs = append(errs, fmt.Errorf("max-queue %d: must be >= 0", c.MaxQueue))
	}
	if len(c.Targets) > 0 && c.Targets[0].Protocol == TCP && len(c.Request.Body) == 0 {
		errs = append(errs, errors.New("tcp targets need a request of at least one byte (--body or --tcp-size)"))
	}
	return errors.Join(errs...)
}

// Progress is a live view of a run.
type Progress struct {
	Elapsed   time.Duration // since the start of the measured window (negative during warm-up)
	Sent      int64
	Completed int64
	Errors    int64
	Dropped   int64
	P50Ns     int64
	P99Ns     int64
}

// ErrorKey identifies one entry of the error set.
type ErrorKey struct {
	Kind    string // one of the Kind constants
	Message string // normalised message (no ephemeral ports)
}

// Result is everything one run measured. Times are relative to the start of
// the measured window unless said otherwise.
type Result struct {
	Config       Config
	Start        time.Time     // wall clock at the start of the measured window
	End          time.Time     // wall clock when the last answer arrived (or the run stopped)
	Scheduled    uint64        // requests the schedule held for the measured window (open loop)
	Sent         int64         // requests actually sent in the measured window
	Completed    int64         // requests that got an answer or an error
	Success      int64         // HTTP 2xx/3xx, gRPC OK, full TCP echo
	Dropped      int64         // tickets dropped because the queue was full
	NotSent      int64         // tickets still queued when the window ended (EndGrace past it): never sent
	Canceled     int64         // requests cut short by an interrupt (not counted as errors)
	BytesIn      int64         // see Outcome
	BytesOut     int64         // see Outcome
	FirstSend    time.Duration // first actual send
	LastSend     time.Duration // last actual send
	LastEnd      time.Duration // last answer
	Codes        map[int]int64 // protocol status → count (0: transport error)
	Errors       map[ErrorKey]int64
	Latency      *latency.Recorder // end − intended send (what users feel)
	ServiceTime  *latency.Recorder // end − actual send
	ScheduleLag  *latency.Recorder // actual − intended send
	Interrupted  bool              // the run was cancelled before its end
	ConnectionsN int               // connections used
	// Intervals holds, when Config.Interval > 0, the histograms of each
	// interval of the measured window from its start to the last answer,
	// in time order (merged over shards, exact); an interval in which
	// nothing was answered is empty, not left out. They are compact (a
	// few KB per interval), so an hour of seconds stays small.
	Intervals []Interval
}

// Interval is the answers that arrived in [Start, Start+Config.Interval)
// of the measured window.
type Interval struct {
	Start                             time.Duration // since the measured window opened
	Latency, ServiceTime, ScheduleLag *latency.Compact
	// Failed counts the interval's answers that were failures (an error,
	// or a status that is not a success): the histograms hold every
	// answer, failures too.
	Failed int64
}

// shard is one set of recorders; workers map onto shards so memory stays
// bounded with thousands of connections. Merging shards is exact.
type shard struct {
	mu                  sync.Mutex
	lat, svc, lag       *latency.Recorder
	codes               map[int]int64
	errs                map[ErrorKey]int64
	sent, done, ok      int64
	canceled            int64
	bytesIn, bytesOut   int64
	firstSend, lastSend int64
	lastEnd             int64
	// pending holds the measured answers the interval sealer has not taken
	// yet, when Config.Interval > 0 (see intervals.go).
	collect bool
	pending []answer
}

func newShard() *shard {
	return &shard{lat: latency.NewRecorder(), svc: latency.NewRecorder(), lag: latency.NewRecorder(),
		codes: map[int]int64{}, errs: map[ErrorKey]int64{}, firstSend: math.MaxInt64}
}

// maxErrorMessages bounds the error set per shard; further distinct messages
// are counted under a generic one of the same kind.
const maxErrorMessages = 64

type ticket struct {
	n        uint64
	intended time.Duration // since run start (including warm-up)
}

// EndGrace is how long after the end of the measured window a request that
// was due within the window may still start: a ticket taken by a worker
// later than that is not sent but counted in Result.NotSent. It absorbs
// the pacer's wake-up delay and a short stall of a busy machine for the
// last requests of the window (on a loaded 2-core machine, 100 ms left a
// 1-s lab run short of 18 requests that the run was otherwise carrying)
// without letting a queue of late tickets run on for a timeout each.
const EndGrace = 500 * time.Millisecond

// NotSentReason says why Result.NotSent requests were never sent.
const NotSentReason = "the measured window ended while they waited for a free connection"

// Run executes the load and returns what it measured.
//
// End of the window: no request starts later than EndGrace after the
// measured window ends; tickets still queued then are counted in NotSent
// (never sent, so they make the rate shortfall); a request in flight gets
// at most Timeout from its send. A run therefore ends within warm-up +
// duration + EndGrace + Timeout (plus closing the connections).
//
// Cancelling ctx stops the schedule, abandons in-flight requests at once
// on every client (they count as Canceled, neither answers nor errors) and
// returns the partial result with Interrupted set (and a nil error).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.TLS == nil {
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if cfg.Load.Bulk() {
		return runBulk(ctx, cfg, now)
	}
	nShards := min(cfg.Connections, 4*runtime.GOMAXPROCS(0))
	shards := make([]*shard, nShards)
	for i := range shards {
		shards[i] = newShard()
		shards[i].collect = cfg.Interval > 0
	}
	conns := make([]conn, cfg.Connections)
	for i := range conns {
		c, err := newConn(cfg.Targets[i%len(cfg.Targets)], cfg.Request, cfg.TLS, cfg.KeepAlive && cfg.RequestsPerConnection != 1)
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return nil, fmt.Errorf("preparing connection to %s: %w", cfg.Targets[i%len(cfg.Targets)].Raw, err)
		}
		if r, ok := c.(requestIDer); ok && cfg.RequestIDs != "" {
			r.useRequestIDs(cfg.RequestIDs)
		}
		conns[i] = recycle(c, cfg.RequestsPerConnection)
	}
	per := perRequest{ids: cfg.RequestIDs != "", on: cfg.OnRequest}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	// Cancellation abandons in-flight requests on every client at once,
	// whether or not its blocking calls watch the context.
	stopAbort := context.AfterFunc(runCtx, func() {
		for _, c := range conns {
			c.Abort()
		}
	})
	var dropped, notSent, outstanding atomic.Int64
	startMono := time.Now()
	startWall := now()
	warm := cfg.Warmup
	measureEnd := cfg.Warmup + cfg.Duration
	since := func() time.Duration { return time.Since(startMono) }

	var sealer *intervalSealer
	sealerDone, sealerStopped := make(chan struct{}), make(chan struct{})
	if cfg.Interval > 0 {
		sealer = newIntervalSealer(cfg.Interval, warm)
		go func() {
			defer close(sealerStopped)
			sealer.run(shards, since, sealerDone)
		}()
	} else {
		close(sealerStopped)
	}

	var wg sync.WaitGroup
	var queue chan ticket
	var scheduled uint64
	if !cfg.Load.Closed() {
		// Capacity for every connection plus the waiting room: a ticket is
		// dropped only when `outstanding` (queued + in flight) reaches it.
		limit := int64(cfg.MaxQueue + cfg.Connections)
		queue = make(chan ticket, limit)
		pacer := Pacer{Rate: cfg.Load.Rate(), Duration: measureEnd, Tick: cfg.SendTick}
		warmPacer := Pacer{Rate: cfg.Load.Rate(), Duration: warm}
		if cfg.Arrivals == ArrivalsPoisson {
			pacer.Poisson, warmPacer.Poisson = NewPoissonSchedule(cfg.Seed), NewPoissonSchedule(cfg.Seed)
		}
		warmCount := warmPacer.Total()
		if warm == 0 {
			warmCount = 0
		}
		scheduled = pacer.Total() - warmCount
		lazy := newHarvest()
		for _, c := range conns {
			if h, ok := c.(harvester); ok && lazyReads {
				h.useHarvest(lazy)
			}
		}
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				openWorker(runCtx, conns[i], shards[i%nShards], queue, &outstanding, &notSent, warmCount, startMono, cfg.Timeout, measureEnd+EndGrace, per)
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(queue)
			pace(runCtx, pacer, queue, &outstanding, int64(cfg.Connections), limit, since, warmCount, &dropped, lazy)
		}()
	} else {
		var seq atomic.Uint64
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				closedWorker(runCtx, conns[i], shards[i%nShards], startMono, cfg.Timeout, warm, measureEnd, per, &seq)
			}()
		}
	}

	progressDone := make(chan struct{})
	if cfg.Progress != nil {
		interval := cfg.ProgressInterval
		if interval <= 0 {
			interval = time.Second
		}
		go func() {
			t := time.NewTicker(interval)
			defer t.Stop()
			merged := latency.NewRecorder() // reused: a snapshot allocates nothing
			for {
				select {
				case <-progressDone:
					return
				case <-t.C:
					cfg.Progress(snapshotProgress(shards, merged, dropped.Load(), since()-warm))
				}
			}
		}()
	}
	wg.Wait()
	stopAbort()
	close(progressDone)
	close(sealerDone)
	<-sealerStopped
	for _, c := range conns {
		c.Close()
	}

	res := &Result{Config: cfg, Start: startWall.Add(warm), Scheduled: scheduled,
		Dropped: dropped.Load(), NotSent: notSent.Load(), Codes: map[int]int64{}, Errors: map[ErrorKey]int64{},
		Latency: latency.NewRecorder(), ServiceTime: latency.NewRecorder(), ScheduleLag: latency.NewRecorder(),
		Interrupted: ctx.Err() != nil, ConnectionsN: cfg.Connections}
	first := int64(math.MaxInt64)
	for _, s := range shards {
		if err := errors.Join(res.Latency.Merge(s.lat), res.ServiceTime.Merge(s.svc), res.ScheduleLag.Merge(s.lag)); err != nil {
			return nil, err
		}
		res.Sent += s.sent
		res.Completed += s.done
		res.Success += s.ok
		res.Canceled += s.canceled
		res.BytesIn += s.bytesIn
		res.BytesOut += s.bytesOut
		first = min(first, s.firstSend)
		res.LastSend = max(res.LastSend, time.Duration(s.lastSend))
		res.LastEnd = max(res.LastEnd, time.Duration(s.lastEnd))
		for k, v := range s.codes {
			res.Codes[k] += v
		}
		for k, v := range s.errs {
			res.Errors[k] += v
		}
	}
	if sealer != nil {
		var err error
		if res.Intervals, err = sealer.finish(shards); err != nil {
			return nil, err
		}
	}
	if res.Sent > 0 {
		res.FirstSend = time.Duration(first)
	}
	// Shift to the measured window.
	res.FirstSend = max(res.FirstSend-warm, 0)
	res.LastSend = max(res.LastSend-warm, 0)
	res.LastEnd = max(res.LastEnd-warm, 0)
	res.End = res.Start.Add(res.LastEnd)
	return res, nil
}

// harvester is a client that can read its answers at the pacer's
// wake-ups (see harvest).
type harvester interface {
	useHarvest(h *harvest)
}

// lazyReads lets open loops read answers at the pacer's wake-ups; the
// benchmarks turn it off to measure the difference.
var lazyReads = true

// pace runs the schedule: it waits until each request is due and offers its
// ticket to the queue, dropping it when the queue is full. It ticks the
// harvest at every wake-up and turns it off when answers must be read as
// they come (see harvest).
func pace(ctx context.Context, p Pacer, queue chan ticket, outstanding *atomic.Int64, conns, limit int64,
	since func() time.Duration, warmCount uint64, dropped *atomic.Int64, lazy *harvest) {
	w := newWaiter()
	defer w.close()
	defer lazy.set(false)
	var comp wakeCompensator
	var lastTick time.Duration
	for n := uint64(0); ; {
		now := since()
		wait, stop := p.Pace(now, n)
		if stop {
			return
		}
		early := comp.early()
		if p.Tick > 0 {
			// The tick's lag dwarfs the timer's wake-up delay: waking a
			// little late keeps every request at or after its due time.
			early = 0
		}
		if wait > early {
			// Sleep at most one chunk, then ask the pacer again: a late
			// wake-up is never compounded and cancellation is noticed.
			// The sleep ends `early` before the due time, the timer's
			// usual wake-up delay, so the request leaves on time rather
			// than one wake-up delay late.
			sleep := min(wait-early, maxWaitChunk)
			lazy.set(wait <= lazyMaxGap && len(queue) == 0)
			t0 := since()
			if err := w.wait(ctx, sleep); err != nil {
				return
			}
			comp.observe(since() - t0 - sleep)
			lastTick = since()
			// The parked connections are woken to read what arrived while
			// this slept, but they run only after the due request has been
			// handed out: its worker, readied last, runs first, so the
			// request leaves before the reads (no schedule lag from them)
			// and with no extra round through the scheduler. Only when
			// every connection is busy does the pacer yield first, so that
			// the ones that got their answers are free for the ticket.
			if lazy.tick() && outstanding.Load() >= conns {
				runtime.Gosched()
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if now-lastTick >= lazyMaxGap {
			// Running behind without sleeping: the parked connections
			// still get their tick.
			lazy.tick()
			lastTick = now
		}
		intended, _ := p.Intended(n)
		if outstanding.Load() < limit {
			// Only this goroutine increases outstanding, so the channel
			// (capacity limit) has room: the send never blocks.
			outstanding.Add(1)
			queue <- ticket{n: n, intended: intended}
			if len(queue) > 0 {
				// Every connection is busy: answers must be read as they
				// come, so that the waiting ticket leaves soonest.
				lazy.set(false)
			}
		} else if n >= warmCount {
			dropped.Add(1)
		}
		n++
	}
}

// wakeCompensator learns how late the timer wakes the pacer: the smallest
// delay seen over the last 32 sleeps (capped at 200 µs). Sleeping that much
// less than asked makes a request leave at its due time on most wake-ups
// and only rarely a few µs early; an early request's latency is then counted
// from its actual send (see record), never from the later intended time.
type wakeCompensator struct {
	late [32]time.Duration
	n    int
}

const maxWakeCompensation = 200 * time.Microsecond

func (c *wakeCompensator) observe(late time.Duration) {
	c.late[c.n%len(c.late)] = max(0, min(late, maxWakeCompensation))
	c.n++
}

func (c *wakeCompensator) early() time.Duration {
	if c.n < len(c.late) {
		return 0
	}
	m := c.late[0]
	for _, v := range c.late[1:] {
		m = min(m, v)
	}
	return m
}

// openWorker sends the tickets it takes from the queue on its connection.
// A ticket taken at or after lastStart (the window's end plus EndGrace) is
// not sent: it counts in notSent.
func openWorker(ctx context.Context, c conn, s *shard, queue <-chan ticket, outstanding, notSent *atomic.Int64,
	warmCount uint64, start time.Time, timeout, lastStart time.Duration, per perRequest) {
	for t := range queue {
		if ctx.Err() != nil {
			outstanding.Add(-1)
			continue // drain without sending
		}
		actual := time.Since(start)
		if actual >= lastStart {
			outstanding.Add(-1)
			if t.n >= warmCount {
				notSent.Add(1)
			}
			continue
		}
		per.before(c, t.n)
		out := c.Do(ctx, start.Add(actual+timeout))
		end := answeredAt(time.Now(), start, actual, out)
		outstanding.Add(-1)
		per.after(t.n, t.n >= warmCount, t.intended, actual, end, out)
		if t.n < warmCount {
			continue
		}
		record(ctx, s, out, t.intended, actual, end)
	}
}

func closedWorker(ctx context.Context, c conn, s *shard, start time.Time, timeout, warm, measureEnd time.Duration,
	per perRequest, seq *atomic.Uint64) {
	for ctx.Err() == nil {
		actual := time.Since(start)
		if actual >= measureEnd {
			return
		}
		n := seq.Add(1) - 1
		per.before(c, n)
		out := c.Do(ctx, start.Add(actual+timeout))
		end := answeredAt(time.Now(), start, actual, out)
		per.after(n, actual >= warm, actual, actual, end, out)
		if actual < warm {
			continue
		}
		record(ctx, s, out, actual, actual, end)
	}
}

// answeredAt is when a request sent at actual (since start) was answered,
// now being when Do returned: when the kernel received the answer's last
// bytes, where the client can tell (Outcome.arrivedUnixNs), else now. The
// receive time leaves out how long this process took to get round to
// reading the answer, which is the generator's delay, not the target's.
// The receive time is wall-clock, converted through now's own wall and
// monotonic readings; one before the send or after now (the wall clock
// stepped in between) is not believed.
func answeredAt(now, start time.Time, actual time.Duration, out Outcome) time.Duration {
	end := now.Sub(start)
	if out.arrivedUnixNs != 0 {
		if ago := time.Duration(now.UnixNano() - out.arrivedUnixNs); ago > 0 && end-ago >= actual {
			end -= ago
		}
	}
	return end
}

func record(ctx context.Context, s *shard, out Outcome, intended, actual, end time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	s.firstSend = min(s.firstSend, int64(actual))
	s.lastSend = max(s.lastSend, int64(actual))
	if out.Err != nil && ctx.Err() != nil {
		// Cut short by an interrupt: neither an answer nor an error of the target.
		s.canceled++
		return
	}
	s.done++
	s.lastEnd = max(s.lastEnd, int64(end))
	// A request sent a little before its intended time (the pacer's wake-up
	// compensation) is timed from its actual send: latency is never
	// shortened below the service time.
	a := answer{end: int64(end), lat: int64(end - min(intended, actual)), svc: int64(end - actual), lag: int64(max(actual-intended, 0)),
		failed: out.Err != nil || !isSuccess(out.Code)}
	s.lat.Record(a.lat)
	s.svc.Record(a.svc)
	s.lag.Record(a.lag)
	if s.collect {
		s.pending = append(s.pending, a)
	}
	s.bytesIn += out.BytesIn
	s.bytesOut += out.BytesOut
	s.codes[out.Code]++
	if out.Err == nil && isSuccess(out.Code) {
		s.ok++
	}
	var k ErrorKey
	switch {
	case out.Err != nil:
		k = ErrorKey{Kind: ClassifyError(out.Err), Message: normalizeError(out.Err)}
	case !isSuccess(out.Code):
		// An HTTP error status is an answer, but a failed request: it is
		// listed the way vegeta lists it ("503 Service Unavailable").
		k = ErrorKey{Kind: KindStatus, Message: StatusError(out.Code)}
	default:
		return
	}
	if _, seen := s.errs[k]; !seen && len(s.errs) >= maxErrorMessages {
		k.Message = "(further distinct " + k.Kind + " errors)"
	}
	s.errs[k]++
}

// StatusError renders a failed HTTP status as vegeta's error set does
// (Go's Response.Status): "503 Service Unavailable".
func StatusError(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code) + " status code " + strconv.Itoa(code)
}

// isSuccess: HTTP 2xx/3xx, tcpOK. gRPC OK (0) arrives with Err == nil and
// Code 0, handled by the caller through Err.
func isSuccess(code int) bool {
	return code == 0 || code == tcpOK || (code >= 200 && code < 400)
}

// snapshotProgress merges the shards' figures so far; merged is scratch.
func snapshotProgress(shards []*shard, merged *latency.Recorder, dropped int64, elapsed time.Duration) Progress {
	p := Progress{Elapsed: elapsed, Dropped: dropped}
	merged.Reset()
	for _, s := range shards {
		s.mu.Lock()
		p.Sent += s.sent
		p.Completed += s.done
		for _, n := range s.errs {
			p.Errors += n
		}
		_ = merged.Merge(s.lat)
		s.mu.Unlock()
	}
	p.P50Ns = merged.Percentile(50)
	p.P99Ns = merged.Percentile(99)
	return p
}

// normalizeError renders an error without the parts that differ per
// connection (ephemeral local ports), so equal failures group together.
func normalizeError(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		// A nested OpError (one per layer) names the local port: keep the
		// innermost cause only.
		cause := op.Err
		for inner := (*net.OpError)(nil); errors.As(cause, &inner) && inner.Err != nil; {
			cause = inner.Err
		}
		op = &net.OpError{Op: op.Op, Net: op.Net, Addr: op.Addr, Err: cause}
		msg := op.Op
		if op.Net != "" {
			msg += " " + op.Net
		}
		if op.Addr != nil {
			msg += " " + op.Addr.String()
		}
		if op.Err != nil {
			msg += ": " + op.Err.Error()
		}
		return msg
	}
	return err.Error()
}
