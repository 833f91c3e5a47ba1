package results

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/load/loadgen"
)

// fakeRun builds an engine result from a deterministic stream of latencies.
// It is a fixture of the engine's output type, not a stand-in for a server:
// merge and encoding are pure functions of it.
func fakeRun(seed uint64, n int, start time.Time) *loadgen.Result {
	rng := rand.New(rand.NewPCG(seed, 7))
	tg, _ := loadgen.ParseTarget("http://127.0.0.1:8080/", false)
	r := &loadgen.Result{
		Config: loadgen.Config{Targets: []loadgen.Target{tg}, Load: loadgen.OpenLoopPerSecond(100),
			Duration: time.Duration(n) * 10 * time.Millisecond, Timeout: time.Second, Connections: 2, MaxQueue: 100,
			Interval: time.Second},
		Start: start, End: start.Add(time.Duration(n) * 10 * time.Millisecond), Scheduled: uint64(n),
		Latency: latency.NewRecorder(), ServiceTime: latency.NewRecorder(), ScheduleLag: latency.NewRecorder(),
		Codes: map[int]int64{}, Errors: map[loadgen.ErrorKey]int64{}, ConnectionsN: 2,
	}
	var ivs [][3]*latency.Recorder // the engine's intervals, before it compacts them
	var failed []int64             // their failed answers
	for i := 0; i < n; i++ {
		svc := int64(50_000 + rng.ExpFloat64()*200_000)
		lag := int64(rng.Float64() * 30_000)
		r.Latency.Record(svc + lag)
		r.ServiceTime.Record(svc)
		r.ScheduleLag.Record(lag)
		// One answer every 10 ms: 100 per one-second interval.
		if k := i / 100; k == len(ivs) {
			ivs = append(ivs, [3]*latency.Recorder{latency.NewRecorder(), latency.NewRecorder(), latency.NewRecorder()})
			failed = append(failed, 0)
		}
		iv := ivs[len(ivs)-1]
		iv[0].Record(svc + lag)
		iv[1].Record(svc)
		iv[2].Record(lag)
		r.Sent++
		r.Completed++
		if i%50 == 49 {
			failed[len(failed)-1]++
			r.Codes[0]++
			r.Errors[loadgen.ErrorKey{Kind: "reset", Message: "read tcp 127.0.0.1:8080: connection reset by peer"}]++
		} else {
			r.Codes[200]++
			r.Success++
			r.BytesIn += 615
		}
	}
	for k, iv := range ivs {
		var c [3]*latency.Compact
		for j, r := range iv {
			var err error
			if c[j], err = r.Compact(); err != nil {
				panic(err)
			}
		}
		r.Intervals = append(r.Intervals, loadgen.Interval{Start: time.Duration(k) * time.Second,
			Latency: c[0], ServiceTime: c[1], ScheduleLag: c[2], Failed: failed[k]})
	}
	r.FirstSend = 0
	r.LastSend = time.Duration(n-1) * 10 * time.Millisecond
	r.LastEnd = r.LastSend + time.Millisecond
	return r
}

func encode(t *testing.T, r *loadgen.Result) *LoadResult {
	t.Helper()
	out, err := FromRun(r, "test")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteReadRoundTrip(t *testing.T) {
	in := encode(t, fakeRun(1, 1000, time.Unix(1_700_000_000, 0)))
	var buf bytes.Buffer
	if err := in.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(back)
	if !bytes.Equal(a, b) {
		t.Fatal("round trip changed the result")
	}
}

// TestMergeEqualsWhole: two workers' halves, merged, give exactly the
// histograms and counts of the single run they were cut from.
func TestMergeEqualsWhole(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	whole := fakeRun(3, 2000, start)
	// Cut the same stream in two: replay it into two recorders alternately.
	rng := rand.New(rand.NewPCG(3, 7))
	halves := [2]*loadgen.Result{fakeRun(99, 0, start), fakeRun(99, 0, start.Add(5*time.Millisecond))}
	for i := 0; i < 2000; i++ {
		svc := int64(50_000 + rng.ExpFloat64()*200_000)
		lag := int64(rng.Float64() * 30_000)
		h := halves[i%2]
		h.Latency.Record(svc + lag)
		h.ServiceTime.Record(svc)
		h.ScheduleLag.Record(lag)
		h.Sent++
		h.Completed++
		if i%50 == 49 {
			h.Codes[0]++
			h.Errors[loadgen.ErrorKey{Kind: "reset", Message: "read tcp 127.0.0.1:8080: connection reset by peer"}]++
		} else {
			h.Codes[200]++
			h.Success++
			h.BytesIn += 615
		}
	}
	for _, h := range halves {
		h.Scheduled = 1000
		h.LastSend = time.Duration(1999) * 10 * time.Millisecond
		h.LastEnd = h.LastSend + time.Millisecond
	}
	merged, err := Merge([]*LoadResult{encode(t, halves[0]), encode(t, halves[1])})
	if err != nil {
		t.Fatal(err)
	}
	w := encode(t, whole)
	if merged.Latency != w.Latency || merged.ServiceTime != w.ServiceTime || merged.ScheduleLag != w.ScheduleLag {
		t.Fatalf("merged histograms differ from the whole run:\n%+v\n%+v", merged.Latency.Summary, w.Latency.Summary)
	}
	if merged.Sent != w.Sent || merged.Success != w.Success || merged.BytesIn != w.BytesIn ||
		merged.StatusCodes["200"] != w.StatusCodes["200"] || merged.Errors[0].Count != w.Errors[0].Count {
		t.Fatalf("merged counts differ: %+v vs %+v", merged, w)
	}
	if merged.Workers != 2 || merged.TargetRatePerSec != 200 || merged.Connections != 4 {
		t.Errorf("workers %d rate %v connections %d", merged.Workers, merged.TargetRatePerSec, merged.Connections)
	}
	if merged.FirstSendNs != start.UnixNano() {
		t.Errorf("first send %d, want the earliest worker's", merged.FirstSendNs)
	}
}

func TestMergeRefusesMixedModels(t *testing.T) {
	a := encode(t, fakeRun(1, 10, time.Unix(0, 0)))
	b := encode(t, fakeRun(2, 10, time.Unix(0, 0)))
	b.Model = ModelClosed
	if _, err := Merge([]*LoadResult{a, b}); err == nil {
		t.Fatal("merged open and closed loop results")
	}
}

// TestMergeWorkerShares: shares of one split load merge (in any order,
// beside unsplit results), and the merge has no worker of its own; two
// shares with the same index, or with different counts, are refused with
// the parts named.
func TestMergeWorkerShares(t *testing.T) {
	share := func(seed uint64, w *WorkerShare) *LoadResult {
		r := encode(t, fakeRun(seed, 10, time.Unix(0, 0)))
		r.Worker = w
		return r
	}
	tests := []struct {
		name    string
		workers []*WorkerShare // nil: an unsplit result
		err     string         // "" merges
	}{
		// Every share of a 3-way split, out of order.
		{"whole split", []*WorkerShare{{2, 3}, {0, 3}, {1, 3}}, ""},
		// Part of a split: merging what arrived is allowed (the caller
		// counts what is missing).
		{"some shares", []*WorkerShare{{0, 3}, {2, 3}}, ""},
		// Unsplit results are not shares: nothing to check.
		{"unsplit", []*WorkerShare{nil, nil}, ""},
		{"shares and an unsplit result", []*WorkerShare{{0, 2}, nil, {1, 2}}, ""},
		// The same share twice would count its requests twice.
		{"same index", []*WorkerShare{{0, 2}, {1, 2}, {1, 2}}, "parts 2 and 3 are both worker 1 of 2"},
		// Shares of different splits do not add up to one load.
		{"different counts", []*WorkerShare{{0, 2}, {1, 3}}, "part 2 is worker 1 of 3 but part 1 is worker 0 of 2"},
		{"different counts after an unsplit one", []*WorkerShare{nil, {0, 4}, {1, 2}}, "part 3 is worker 1 of 2 but part 2 is worker 0 of 4"},
	}
	for _, tt := range tests {
		var parts []*LoadResult
		for i, w := range tt.workers {
			parts = append(parts, share(uint64(i+1), w))
		}
		m, err := Merge(parts)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err == "" && (m.Worker != nil || m.Workers != len(parts)):
			t.Errorf("%s: merged worker %+v, workers %d; want none, %d", tt.name, m.Worker, m.Workers, len(parts))
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		}
	}
}

// TestWorkerShareRoundTrip: a share is written as a "worker" object and
// read back; an unsplit result has no "worker" key at all.
func TestWorkerShareRoundTrip(t *testing.T) {
	r := encode(t, fakeRun(1, 10, time.Unix(0, 0)))
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `"worker"`) {
		t.Errorf("unsplit result has a worker key:\n%s", buf.String())
	}
	r.Worker = &WorkerShare{Index: 2, Count: 4}
	buf.Reset()
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\"worker\": {\n    \"index\": 2,\n    \"count\": 4\n  }") {
		t.Errorf("share written as:\n%s", buf.String())
	}
	back, err := Read(&buf)
	if err != nil || back.Worker == nil || *back.Worker != (WorkerShare{Index: 2, Count: 4}) {
		t.Errorf("read back worker %+v, %v", back.Worker, err)
	}
}

// TestMergeIntervals: workers' intervals land on one time line by their
// wall-clock starts, each on the merged second nearest its start, and the
// merge holds every answer; a part without intervals leaves the merge
// without any (a partial time line would misstate the rate).
func TestMergeIntervals(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name string
		// offsets of the parts' windows from the first's, each 300
		// answers (3 intervals)
		offsets []time.Duration
		strip   bool // the second part has no intervals
		want    []int64
	}{
		// Aligned: counts add per second.
		{"aligned", []time.Duration{0, 0}, false, []int64{200, 200, 200}},
		// 2 s later: the second part's seconds follow on.
		{"two seconds apart", []time.Duration{0, 2 * time.Second}, false, []int64{100, 100, 200, 100, 100}},
		// 0.4 s later rounds to the same second; 0.6 s to the next.
		{"0.4 s apart", []time.Duration{0, 400 * time.Millisecond}, false, []int64{200, 200, 200}},
		{"0.6 s apart", []time.Duration{0, 600 * time.Millisecond}, false, []int64{100, 200, 200, 100}},
		// A part without intervals: none merged.
		{"one part without", []time.Duration{0, 0}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts []*LoadResult
			for i, off := range tt.offsets {
				p := encode(t, fakeRun(uint64(i+1), 300, t0.Add(off)))
				if tt.strip && i == 1 {
					p.Intervals = nil
				}
				parts = append(parts, p)
			}
			m, err := Merge(parts)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			var failed int64
			for _, iv := range m.Intervals {
				got = append(got, iv.Latency.Count)
				failed += iv.Failed
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("merged counts per second %v, want %v", got, tt.want)
			}
			// fakeRun fails every 50th answer: 6 of each part's 300.
			if want := int64(6 * len(tt.offsets)); m.Intervals != nil && failed != want {
				t.Errorf("merged intervals count %d failed, want %d", failed, want)
			}
			if err := m.Check(); err != nil {
				t.Errorf("merge fails its own check: %v", err)
			}
		})
	}
}

// TestCheckIntervals: a result whose intervals do not add up, or are not
// consecutive, is refused.
func TestCheckIntervals(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *LoadResult)
		want   string
	}{
		// One interval dropped: its answers are missing.
		{"missing answers", func(r *LoadResult) { r.Intervals = r.Intervals[:2] }, "intervals hold 200 latency values but the latency histogram holds 300"},
		// A gap in the time line.
		{"not consecutive", func(r *LoadResult) { r.Intervals[1].StartNs += 1 }, "intervals[1] starts at"},
		// More failed than answered in an interval.
		{"failed above count", func(r *LoadResult) { r.Intervals[0].Failed = 101 }, "intervals[0] counts 101 failed of 100 answers"},
		// More failed in the intervals than in the run.
		{"failed above the run's", func(r *LoadResult) { r.Intervals[0].Failed += 5 }, "intervals count 11 failed answers but the run 6"},
		// Intervals of different lengths.
		{"lengths differ", func(r *LoadResult) { r.Intervals[2].LengthNs = int64(2 * time.Second) }, "of one positive length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := encode(t, fakeRun(1, 300, time.Unix(1_700_000_000, 0)))
			if err := r.Check(); err != nil {
				t.Fatalf("unchanged: %v", err)
			}
			tt.change(r)
			if err := r.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOutputMatchesJSONSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("../../schema/load-result.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 500} {
		var buf bytes.Buffer
		r := encode(t, fakeRun(5, n, time.Unix(1_700_000_000, 0)))
		if n == 1 {
			r.Worker = &WorkerShare{Index: 1, Count: 3} // one share of a split load
		}
		if n == 500 {
			// Tickets left queued at the window's end, and a generator failure.
			r.NotSent, r.NotSentReason = 12, loadgen.NotSentReason
			r.Errors = append(r.Errors, ErrorCount{Kind: loadgen.KindLocal, Message: "dial tcp: socket: too many open files", Count: 1})
		}
		if err := r.Write(&buf); err != nil {
			t.Fatal(err)
		}
		if n == 500 {
			back, err := Read(bytes.NewReader(buf.Bytes()))
			if err != nil || back.NotSent != 12 || back.LocalErrors() != 1 {
				t.Fatalf("not_sent/local read back as %+v, %v", back, err)
			}
		}
		doc, err := jsonschema.UnmarshalJSON(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			t.Errorf("n=%d: result does not match its schema: %v", n, err)
		}
	}
}

func TestReadRejects(t *testing.T) {
	good := encode(t, fakeRun(1, 10, time.Unix(0, 0)))
	tests := []struct {
		name string
		mod  func(r *LoadResult)
	}{
		{"other schema version", func(r *LoadResult) { r.Schema = "meshbench.load-result/v0" }},
		{"unknown model", func(r *LoadResult) { r.Model = "sideways" }},
		{"more completed than sent", func(r *LoadResult) { r.Completed = r.Sent + 1 }},
		{"histogram count disagrees", func(r *LoadResult) { r.Completed--; r.Success-- }},
		{"no workers", func(r *LoadResult) { r.Workers = 0 }},
		{"worker index past its count", func(r *LoadResult) { r.Worker = &WorkerShare{Index: 2, Count: 2} }},
		{"negative worker index", func(r *LoadResult) { r.Worker = &WorkerShare{Index: -1, Count: 2} }},
		{"worker share of a merge", func(r *LoadResult) { r.Worker = &WorkerShare{Index: 0, Count: 2}; r.Workers = 2 }},
	}
	for _, tt := range tests {
		r := *good
		tt.mod(&r)
		var buf bytes.Buffer
		r.Write(&buf)
		if _, err := Read(&buf); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	if _, err := Read(bytes.NewBufferString(`{"schema":"meshbench.load-result/v1","surprise":1}`)); err == nil {
		t.Error("unknown field accepted")
	}
}

// FuzzRead: the results parser never panics, and whatever it accepts can be
// written, read back and merged.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	encodeF(f).Write(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema":"meshbench.load-result/v1"}`))
	if b, err := os.ReadFile("testdata/merged.json"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// A share of a split load must not merge with itself (it would
		// be counted twice); anything else does.
		if _, err := Merge([]*LoadResult{r, r}); (err != nil) != (r.Worker != nil) {
			t.Fatalf("accepted result (worker %+v) merged with itself: %v", r.Worker, err)
		}
		var out bytes.Buffer
		if err := r.Write(&out); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(&out); err != nil {
			t.Fatalf("accepted result does not read back: %v", err)
		}
	})
}

func encodeF(f *testing.F) *LoadResult {
	out, err := FromRun(fakeRun(1, 20, time.Unix(1_700_000_000, 0)), "test")
	if err != nil {
		f.Fatal(err)
	}
	return out
}
