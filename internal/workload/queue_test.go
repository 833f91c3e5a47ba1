package workload

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/sys/precise"
)

// TestServiceQueueModel replays arrivals through the queue's model without
// a clock: each request takes the slot that frees first (as the token
// channel hands them out in order) and ends at max(arrival, free) + s.
func TestServiceQueueModel(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		k        int
		s        time.Duration
		arrivals []time.Duration // offsets from t0, in arrival order
		want     []time.Duration // end of each, from t0
	}{
		// One slot, spaced arrivals: no queueing, each ends s after it came.
		{"spaced", 1, 2 * ms, []time.Duration{0, 2 * ms, 4 * ms}, []time.Duration{2 * ms, 4 * ms, 6 * ms}},
		// One slot, a burst of three: served one after the other.
		{"burst k1", 1, 2 * ms, []time.Duration{0, 0, 0}, []time.Duration{2 * ms, 4 * ms, 6 * ms}},
		// Two slots, a burst of five: pairs share a service period.
		{"burst k2", 2, 2 * ms, []time.Duration{0, 0, 0, 0, 0}, []time.Duration{2 * ms, 2 * ms, 4 * ms, 4 * ms, 6 * ms}},
		// A late arrival into a busy server waits for the first free slot.
		{"late", 2, 10 * ms, []time.Duration{0, 0, 3 * ms}, []time.Duration{10 * ms, 10 * ms, 20 * ms}},
		// Arrivals at exactly the capacity (k/s = 1 per ms) never queue.
		{"at capacity", 2, 2 * ms, []time.Duration{0, ms, 2 * ms, 3 * ms, 4 * ms}, []time.Duration{2 * ms, 3 * ms, 4 * ms, 5 * ms, 6 * ms}},
		// Above the capacity (1.25 per ms, capacity 1 per ms) the wait grows
		// by 0.2 ms per request.
		{"over capacity", 1, ms, []time.Duration{0, 800 * time.Microsecond, 1600 * time.Microsecond, 2400 * time.Microsecond},
			[]time.Duration{ms, 2 * ms, 3 * ms, 4 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			free := make([]time.Time, tt.k) // the slots in the order the channel hands them out
			for i, a := range tt.arrivals {
				// The channel hands out the slot released first: the one with the earliest end.
				sort.Slice(free, func(x, y int) bool { return free[x].Before(free[y]) })
				end := serviceEnd(t0.Add(a), free[0], tt.s)
				free[0] = end
				if got := end.Sub(t0); got != tt.want[i] {
					t.Errorf("arrival %d at %v: ends at %v, want %v", i, a, got, tt.want[i])
				}
			}
		})
	}
	if newServiceQueue(0, time.Second) != nil {
		t.Error("k=0 must mean no queue")
	}
}

// TestServiceQueueCancelWhileWaiting: a request whose client leaves while
// it waits takes no slot, so the next one is served right after the first.
func TestServiceQueueCancelWhileWaiting(t *testing.T) {
	const s = 100 * time.Millisecond
	q := newServiceQueue(1, s)
	var sl precise.Sleeper
	serve := func(ctx context.Context) error { _, err := q.serve(ctx, time.Now(), &sl); return err }
	begin := time.Now()
	first := make(chan error, 1)
	go func() { first <- serve(context.Background()) }()
	time.Sleep(10 * time.Millisecond) // the first is in service
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := serve(ctx); err == nil {
		t.Fatal("a request cancelled while waiting was served")
	}
	if err := serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Two services of 100 ms back to back: 200 ms, not 300 ms (the
	// cancelled one never ran). Upward slack for a loaded machine.
	if took := time.Since(begin); took < 2*s || took > 2*s+80*time.Millisecond {
		t.Errorf("took %v, want about %v", took, 2*s)
	}
}

// TestStaticConcurrencyBound sends 6 requests at once over 6 connections to
// a real server bounded at 2 requests of 40 ms each: they finish in three
// waves, at about 40, 80 and 120 ms.
func TestStaticConcurrencyBound(t *testing.T) {
	const s = 40 * time.Millisecond
	srv := startServer(t, Config{Kind: KindStatic, Concurrency: 2, ServiceTime: s})
	if got, want := (Config{Concurrency: 2, ServiceTime: s}).Capacity(), 50.0; got != want {
		t.Errorf("Capacity = %v, want %v", got, want)
	}
	url := "http://" + srv.Addr() + "/"
	clients := make([]*http.Client, 6)
	for i := range clients {
		clients[i] = h1Client(t)
		get(t, clients[i], "GET", "http://"+srv.Addr()+"/healthz") // connect first; exempt from the bound
	}
	var mu sync.Mutex
	var took []time.Duration
	var wg sync.WaitGroup
	begin := time.Now()
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(context.Background(), "GET", url, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			took = append(took, time.Since(begin))
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	if len(took) != 6 {
		t.Fatalf("%d answers, want 6", len(took))
	}
	// Wave w (1..3) ends at w×s after the burst; goroutine start-up and
	// timer lateness on a loaded 2-core machine can add tens of ms, so the
	// bound is generous upward, strict downward (a wave can never finish
	// early: that would mean more than 2 in service).
	for i, d := range took {
		wave := time.Duration(i/2+1) * s
		if d < wave-2*time.Millisecond || d > wave+60*time.Millisecond {
			t.Errorf("answer %d after %v, want about %v (wave %d)", i, d, wave, i/2+1)
		}
	}
}
