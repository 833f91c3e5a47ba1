package workload

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshbench/meshbench/internal/sys/precise"
)

// DefaultErrorStatus is the HTTP status of injected errors when
// Faults.ErrorStatus is 0.
const DefaultErrorStatus = 500

// MaxDelay is the largest fixed delay (Faults.Delay) and the largest stall
// (Faults.StallEvery, Faults.StallFor) a workload accepts: 1 hour.
const MaxDelay = time.Hour

// Faults are the misbehaviours a workload injects into its answers. The zero
// value injects nothing. Health probes (HTTP GET /healthz, the gRPC health
// service) are exempt.
type Faults struct {
	// Delay is a fixed delay added before every answer, error answers
	// included. 0..MaxDelay.
	Delay time.Duration
	// RandomDelay, when not nil, adds a random delay drawn per answer on top
	// of Delay.
	RandomDelay *Distribution
	// StallEvery is the period of the periodic stall (0 = no stall), at most
	// MaxDelay.
	StallEvery time.Duration
	// StallFor is how long the whole server stops answering at the start of
	// every StallEvery period, periods counted from Server.Started. It must
	// be set together with StallEvery and be shorter than it.
	StallFor time.Duration
	// ErrorRatio is the fraction of requests (0..1) answered with an
	// injected error.
	ErrorRatio float64
	// ErrorStatus is the HTTP status (400..599) of injected errors for the
	// static workload; 0 means DefaultErrorStatus.
	ErrorStatus int
	// Seed seeds the random delay and error choices. With a non-zero Seed the
	// sequence of choices is deterministic (one stream for errors, one for
	// delays, drawn in arrival order); 0 picks a random seed.
	Seed int64
}

// active reports whether f injects anything.
func (f Faults) active() bool {
	return f.Delay > 0 || f.RandomDelay != nil || f.StallFor > 0 || f.ErrorRatio > 0
}

// StallWait returns how long a request arriving sinceStart after server start
// must wait because of a periodic stall. Stall windows are
// [k*every, k*every+stallFor) for k = 0, 1, 2, …; a request arriving inside
// one waits until it ends, any other request does not wait. It returns 0 when
// every or stallFor is not positive, or when sinceStart is negative.
func StallWait(sinceStart, every, stallFor time.Duration) time.Duration {
	if every <= 0 || stallFor <= 0 || sinceStart < 0 {
		return 0
	}
	if into := sinceStart % every; into < stallFor {
		return stallFor - into
	}
	return 0
}

// injector applies Faults to one server. It is safe for concurrent use.
type injector struct {
	start      time.Time
	delay      time.Duration
	dist       *Distribution
	stallEvery time.Duration
	stallFor   time.Duration
	errorRatio float64
	// active: a fault or queue configured, or a control socket that may
	// add a delay later; false keeps the hot path free.
	active bool
	// queue bounds concurrency (Config.Concurrency); nil: unbounded.
	queue *serviceQueue
	// extra is a delay added to every answer at run time (the control
	// socket's PUT /delay: a slow replica), in ns.
	extra atomic.Int64
	// sleeper makes the waits end when they should (precise.Sleeper).
	sleeper precise.Sleeper
	// delays are the waits as the server measured them (DelayStats).
	delays delayRecorder

	mu       sync.Mutex
	errRNG   *rand.Rand // guarded by mu
	delayRNG *rand.Rand // guarded by mu
}

func newInjector(f Faults, queue *serviceQueue, start time.Time) *injector {
	seed := uint64(f.Seed)
	if seed == 0 {
		seed = rand.Uint64()
	}
	in := &injector{
		start:      start,
		delay:      f.Delay,
		dist:       f.RandomDelay,
		stallEvery: f.StallEvery,
		stallFor:   f.StallFor,
		errorRatio: f.ErrorRatio,
		active:     f.active() || queue != nil,
		queue:      queue,
		errRNG:     rand.New(rand.NewPCG(seed, 1)),
		delayRNG:   rand.New(rand.NewPCG(seed, 2)),
	}
	in.delays.reset(start)
	return in
}

// draw makes the random choices for one request: whether it fails and the
// delay (fixed plus random) before its answer.
func (in *injector) draw() (fail bool, delay time.Duration) {
	delay = in.delay + time.Duration(in.extra.Load())
	if in.errorRatio <= 0 && in.dist == nil {
		return false, delay
	}
	in.mu.Lock()
	if in.errorRatio > 0 {
		fail = in.errRNG.Float64() < in.errorRatio
	}
	if in.dist != nil {
		delay += in.dist.Sample(in.delayRNG)
	}
	in.mu.Unlock()
	return fail, delay
}

// plan returns how long a request arriving at now waits before it is
// answered, and whether the answer is an injected error. A request arriving
// inside a stall window first waits for the window's end; then its delay
// runs; if the answer would then fall inside a stall window it is held until
// that window ends too.
func (in *injector) plan(now time.Time) (wait time.Duration, fail bool) {
	wait = StallWait(now.Sub(in.start), in.stallEvery, in.stallFor)
	fail, delay := in.draw()
	if delay > 0 {
		wait += delay
		wait += StallWait(now.Add(wait).Sub(in.start), in.stallEvery, in.stallFor)
	}
	return wait, fail
}

// apply waits as the service queue and the faults require for a request
// arriving now and reports whether to answer with an injected error: first
// its turn in the queue and its service time, then the faults as of the end
// of its service. It returns ctx's error if ctx ends first. The wait is
// measured (DelayStats): from apply's start to its end, against the wait
// planned.
func (in *injector) apply(ctx context.Context) (fail bool, err error) {
	if !in.active {
		return false, nil
	}
	arrival := time.Now()
	var planned time.Duration
	if in.queue != nil {
		end, err := in.queue.serve(ctx, arrival, &in.sleeper)
		if err != nil {
			return false, err
		}
		planned = end.Sub(arrival)
	}
	now := time.Now()
	wait, fail := in.plan(now)
	if wait > 0 {
		// Until the planned end, as closely as the machine allows
		// (precise.Sleeper): the delay is what the faults, the known
		// capacities and the hop timing's known answers rest on.
		if err := in.sleeper.Until(ctx, now.Add(wait)); err != nil {
			return false, err
		}
	}
	if planned += wait; planned > 0 {
		in.delays.record(planned, time.Since(arrival))
	}
	return fail, nil
}

// setExtra sets the delay added to every answer (0: none) and returns the
// one it replaces.
func (in *injector) setExtra(d time.Duration) time.Duration {
	return time.Duration(in.extra.Swap(int64(d)))
}
