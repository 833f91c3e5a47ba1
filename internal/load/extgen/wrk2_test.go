package extgen

import (
	"strings"
	"testing"
	"time"
)

// TestWrk2Output parses wrk2 output written by hand in the format of
// giltene/wrk2's README.md example and src/wrk.c (testdata/wrk2/README.md
// says which parts come from where): the histograms are rebuilt from the
// spectrum's cumulative counts, each at its row's value.
func TestWrk2Output(t *testing.T) {
	anchor := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		file                     string
		completed, success       int64
		latCount, svcCount       int64
		minNs, p50Ns, maxNs      int64
		svcP50Ns                 int64
		runtime                  time.Duration
		errors                   map[string]int64
		calibrated, uncorrection bool
	}{
		// 15 s, -U: 1500 answers, 1000 after calibration; 3 read errors and
		// 2 timeouts counted as failed requests; 12 statuses above 399.
		{"calibrated-u.txt", 1505, 1488, 1000, 1000, 512_000, 1_253_000, 52_223_000, 871_000, 15 * time.Second,
			map[string]int64{"wrk2 socket read errors": 3, "wrk2 socket timeouts (its periodic check of requests older than --timeout)": 2}, true, true},
		// 1 s, --latency only: no calibration, no service time.
		{"short.txt", 50, 50, 50, 0, 198_000, 455_000, 3_011_000, 0, time.Second, map[string]int64{}, false, false},
	} {
		t.Run(tt.file, func(t *testing.T) {
			c := testConfig(t, Wrk2, "100", tt.runtime, 8)
			r, err := wrk2Result(&c, readFixture(t, "wrk2/"+tt.file), anchor)
			if err != nil {
				t.Fatal(err)
			}
			r = roundTrip(t, r)
			if r.Completed != tt.completed || r.Sent != tt.completed || r.Success != tt.success {
				t.Errorf("sent %d completed %d success %d, want %d %d %d", r.Sent, r.Completed, r.Success, tt.completed, tt.completed, tt.success)
			}
			lat, svc, lag, err := r.Histograms()
			if err != nil {
				t.Fatal(err)
			}
			if lat.Count() != tt.latCount || svc.Count() != tt.svcCount || lag.Count() != 0 {
				t.Errorf("histograms hold %d, %d, %d values, want %d, %d, 0", lat.Count(), svc.Count(), lag.Count(), tt.latCount, tt.svcCount)
			}
			// Printed values are exact microseconds: min, p50 and max fall
			// on rows of the spectrum, to HDR's 3 digits.
			for _, x := range []struct {
				name      string
				got, want int64
			}{{"min", lat.MinNs(), tt.minNs}, {"p50", lat.Percentile(50), tt.p50Ns}, {"max", lat.MaxNs(), tt.maxNs}, {"service p50", svc.Percentile(50), tt.svcP50Ns}} {
				if diff := x.got - x.want; diff < -x.want/1000 || diff > x.want/1000 {
					t.Errorf("%s %d ns, want %d ns", x.name, x.got, x.want)
				}
			}
			if len(r.Errors) != len(tt.errors) {
				t.Errorf("errors %+v, want %v", r.Errors, tt.errors)
			}
			for _, e := range r.Errors {
				if tt.errors[e.Message] != e.Count {
					t.Errorf("error %+v, want %v", e, tt.errors)
				}
			}
			g := r.Generator
			if !g.PartialHistograms || !strings.HasPrefix(g.Histograms, "reconstructed from wrk2's percentile spectrum (") {
				t.Errorf("generator %+v", g)
			}
			notes := strings.Join(g.Notes, "\n")
			for _, want := range []string{"schedule_lag: unknown", "bytes_in: left 0"} {
				if !strings.Contains(notes, want) {
					t.Errorf("notes lack %q:\n%s", want, notes)
				}
			}
			if strings.Contains(notes, "calibration") != tt.calibrated {
				t.Errorf("calibration note: want %v:\n%s", tt.calibrated, notes)
			}
			if r.BytesIn != 0 || r.FirstSendNs != 0 || r.ScheduleLag.Count != 0 {
				t.Errorf("figures wrk2 does not give were filled: bytes in %d, first send %d", r.BytesIn, r.FirstSendNs)
			}
			if got := r.EndedAt.Sub(r.StartedAt); got != tt.runtime {
				t.Errorf("window %v, want wrk2's run time %v", got, tt.runtime)
			}
			if got := r.AttackDuration(); got != tt.runtime {
				t.Errorf("attack duration %v, want the window %v", got, tt.runtime)
			}
		})
	}
}

// TestWrk2Malformed: output that is not wrk2's, or inconsistent, is an
// error naming what is wrong.
func TestWrk2Malformed(t *testing.T) {
	good := string(readFixture(t, "wrk2/short.txt"))
	for _, tt := range []struct {
		name, out, contains string
	}{
		// wg/wrk prints no spectrum.
		{"wrk without --latency spectrum", "Running 1s test @ http://x/\n  50 requests in 1.00s, 41.26KB read\n", "no recorded latency spectrum"},
		// Cut before the totals.
		{"no totals", good[:strings.Index(good, "---")], `no "N requests in T, B read" line`},
		// A footer total that disagrees with the rows.
		{"footer disagrees", strings.Replace(good, "Total count    =           50", "Total count    =           51", 1), "footer's total count is 51"},
		// Cumulative counts going down.
		{"counts decrease", strings.Replace(good, "0.300000           16", "0.300000            5", 1), "falls below"},
		// A row that is not four numbers.
		{"bad row", strings.Replace(good, "0.352     0.300000", "0.352     x", 1), "not a spectrum row"},
		// Footer missing.
		{"no footer", strings.Replace(good, "#[Max     =        3.010, Total count    =           50]\n", "", 1), "no \"Total count\" footer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t, Wrk2, "50", time.Second, 2)
			_, err := wrk2Result(&c, []byte(tt.out), time.Unix(0, 0))
			if err == nil || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %v, want one containing %q", err, tt.contains)
			}
		})
	}
}

// FuzzWrk2: any output parses or fails, never panics; a result that
// parses reads back.
func FuzzWrk2(f *testing.F) {
	f.Add(readFixture(f, "wrk2/short.txt"))
	f.Add(readFixture(f, "wrk2/calibrated-u.txt"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := testConfig(t, Wrk2, "50", time.Second, 2)
		r, err := wrk2Result(&c, b, time.Unix(0, 0))
		if err != nil {
			return
		}
		if err := r.Check(); err != nil {
			t.Fatalf("parsed output makes an invalid result: %v", err)
		}
	})
}
