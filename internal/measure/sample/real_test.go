package sample

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// startProcess starts name with args and stops it (by PID) at the end of
// the test.
func startProcess(tb testing.TB, name string, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", name, err)
	}
	tb.Cleanup(func() { stopProcess(cmd) })
	return cmd
}

// stopProcess kills cmd's process by PID and reaps it; it does nothing if
// it was reaped already.
func stopProcess(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func waitFor(tb testing.TB, cond func() bool, what string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSampleRealProcesses samples a busy loop, an idle sleep and two
// processes killed mid-run (one reaped at once, one left a zombie) for
// about 2 s at 200 ms.
func TestSampleRealProcesses(t *testing.T) {
	testutil.Timing(t) // the busy loop's share of a core
	busy := startProcess(t, "sh", "-c", "while :; do :; done")
	idle := startProcess(t, "sleep", "30")
	reaped := startProcess(t, "sleep", "30")
	zombie := startProcess(t, "sleep", "30")
	// Let the sleeps finish exec'ing, so their start-up CPU is not counted.
	for _, c := range []*exec.Cmd{idle, reaped, zombie} {
		waitFor(t, func() bool {
			b, err := os.ReadFile("/proc/" + itoa(c.Process.Pid) + "/comm")
			return err == nil && string(b) == "sleep\n"
		}, "sleep to start")
	}

	s := New(200*time.Millisecond, nil)
	var out bytes.Buffer
	s.Out = &out
	for _, tg := range []Target{
		{busy.Process.Pid, "busy", "app busy", CategoryApp},
		{idle.Process.Pid, "idle", "app idle", CategoryApp},
		{reaped.Process.Pid, "reaped", "victims", CategoryDataPlane},
		{zombie.Process.Pid, "zombie", "victims", CategoryDataPlane},
	} {
		if err := s.Add(tg); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	time.Sleep(time.Second)
	killedAt := time.Now()
	stopProcess(reaped)                           // killed and reaped: /proc entry gone
	if err := zombie.Process.Kill(); err != nil { // killed, not reaped: a zombie
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	rounds := s.Rounds()
	if len(rounds) < 8 {
		t.Fatalf("%d rounds in 2.1 s at 200 ms, want at least 8", len(rounds))
	}
	sum := s.Summary()
	figures := map[string]ProcessSummary{}
	for _, p := range sum.Processes {
		figures[p.Name] = p
	}
	b, i := figures["busy"], figures["idle"]
	t.Logf("busy: %.0f–%.0f m, avg %.1f m over %d rounds; idle: avg %.1f m, max %.0f m",
		b.CPUMillicores.Min, b.CPUMillicores.Max, b.CPUMillicores.Avg, b.Rounds, i.CPUMillicores.Avg, i.CPUMillicores.Max)
	// A busy loop uses one core, 1000 m, minus what the other work on 2
	// shared cores takes from it; one tick of quantisation is 50 m here.
	if b.CPUMillicores.Avg < 400 || b.CPUMillicores.Avg > 1100 {
		t.Errorf("busy loop: avg %.1f m, want ≈ 700–1000 m (400–1100 tolerated)", b.CPUMillicores.Avg)
	} else if b.CPUMillicores.Avg < 700 {
		t.Logf("busy loop got only %.0f m: the machine is busy", b.CPUMillicores.Avg)
	}
	if i.CPUMillicores.Avg > 10 || i.CPUMillicores.Max > 50 {
		t.Errorf("idle sleep: avg %.1f m, max %.0f m; want ≈ 0", i.CPUMillicores.Avg, i.CPUMillicores.Max)
	}
	// Memory: RSS > 0 and PSS <= RSS for every sample of a started process.
	for _, r := range rounds {
		for _, x := range r.Samples {
			if x.PID == os.Getpid() {
				continue // our own memory moves between the two reads
			}
			if x.RSSBytes == 0 || !x.HasPSS || x.PSSBytes == 0 || x.PSSBytes > x.RSSBytes {
				t.Errorf("round %d, %s: RSS %d, PSS %d; want 0 < PSS <= RSS", r.Index, x.Name, x.RSSBytes, x.PSSBytes)
			}
		}
	}
	// The killed processes: one gone gap each, after the kill, and no
	// sample in or after that round.
	for _, name := range []string{"reaped", "zombie"} {
		goneRound := -1
		for _, r := range rounds {
			for _, g := range r.Gaps {
				if g.Name != name {
					continue
				}
				if !g.Gone || g.Reason != GapExited || goneRound >= 0 || g.Time.Before(killedAt) {
					t.Errorf("%s: unexpected gap %+v in round %d", name, g, r.Index)
				}
				goneRound = r.Index
			}
			for _, x := range r.Samples {
				if x.Name == name && goneRound >= 0 {
					t.Errorf("%s sampled in round %d, after it was gone in round %d", name, r.Index, goneRound)
				}
			}
		}
		if goneRound < 0 || goneRound == len(rounds)-1 {
			t.Errorf("%s: gone in round %d of %d; want a gap followed by rounds without it", name, goneRound, len(rounds))
		}
		if p := figures[name]; !p.Gone || p.Rounds == 0 {
			t.Errorf("%s summary: %+v, want samples then gone", name, p)
		}
	}
	// The sampler's own process and the cost of each round are reported.
	if self, ok := figures["meshbench"]; !ok || self.Category != CategoryOverhead || self.Rounds == 0 || self.RSSBytes.Min == 0 {
		t.Errorf("own process: %+v", self)
	}
	for _, r := range rounds {
		if r.Overhead.CPU <= 0 || r.Overhead.Wall <= 0 || r.Overhead.Processes < 3 {
			t.Errorf("round %d overhead %+v", r.Index, r.Overhead)
		}
	}
	t.Logf("sampler overhead: %+v", sum.Overhead)
	// The JSON lines hold the same rounds.
	back, err := ReadRounds(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(rounds) || Summarize(back).Total.Rounds != sum.Total.Rounds {
		t.Errorf("JSON lines: %d rounds, want %d", len(back), len(rounds))
	}
}

// TestSamplePSSEveryReal samples two real processes with PSSEvery 3: PSS
// (smaps_rollup) is read in rounds 1, 4 and 7 only, for every sample of
// them; the other rounds' samples have CPU and RSS and say they have no
// PSS. The summary's PSS is over the three readings, and the JSON lines
// round-trip both kinds of sample.
func TestSamplePSSEveryReal(t *testing.T) {
	busy := startProcess(t, "sh", "-c", "while :; do :; done")
	idle := startProcess(t, "sleep", "30")
	waitFor(t, func() bool {
		b, err := os.ReadFile("/proc/" + itoa(idle.Process.Pid) + "/comm")
		return err == nil && string(b) == "sleep\n"
	}, "sleep to start")

	s := New(100*time.Millisecond, nil)
	s.PSSEvery = 3
	var out bytes.Buffer
	s.Out = &out
	smaps := map[int]int{} // round → smaps_rollup reads
	round := 0
	read := s.read
	s.read = func(pid int, pss bool) (ProcSample, error) {
		if pss {
			smaps[round]++
		}
		return read(pid, pss)
	}
	for _, tg := range []Target{
		{busy.Process.Pid, "busy", "busy", CategoryApp},
		{idle.Process.Pid, "idle", "idle", CategoryApp},
	} {
		if err := s.Add(tg); err != nil {
			t.Fatal(err)
		}
	}
	const n = 9
	for round = 0; round < n; round++ {
		if round > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		s.SampleNow()
	}
	rounds := s.Rounds()
	pssByName := map[string][]float64{}
	for _, r := range rounds {
		wantPSS := r.Index == 1 || r.Index == 4 || r.Index == 7
		wantSamples := 3 // busy, idle and the sampler itself
		if r.Index == 0 {
			wantPSS, wantSamples = false, 0 // baselines
		}
		if len(r.Samples) != wantSamples || len(r.Gaps) != 0 {
			t.Fatalf("round %d: %d samples, gaps %+v; want %d samples", r.Index, len(r.Samples), r.Gaps, wantSamples)
		}
		if r.HasPSS() != wantPSS || (smaps[r.Index] > 0) != wantPSS {
			t.Errorf("round %d: HasPSS %v, %d smaps_rollup reads; want PSS %v", r.Index, r.HasPSS(), smaps[r.Index], wantPSS)
		}
		for _, x := range r.Samples {
			switch {
			case x.RSSBytes == 0:
				t.Errorf("round %d, %s: no RSS", r.Index, x.Name)
			case x.HasPSS != wantPSS:
				t.Errorf("round %d, %s: HasPSS %v, want %v", r.Index, x.Name, x.HasPSS, wantPSS)
			case !wantPSS && x.PSSBytes != 0:
				t.Errorf("round %d, %s: PSS %d without a reading", r.Index, x.Name, x.PSSBytes)
			case wantPSS && (x.PSSBytes == 0 || (x.PID != os.Getpid() && x.PSSBytes > x.RSSBytes)):
				t.Errorf("round %d, %s: RSS %d, PSS %d; want 0 < PSS <= RSS", r.Index, x.Name, x.RSSBytes, x.PSSBytes)
			}
			if x.HasPSS {
				pssByName[x.Name] = append(pssByName[x.Name], float64(x.PSSBytes))
			}
		}
	}
	// CPU is measured in the rounds without PSS too.
	var busyCPU float64
	for _, r := range rounds {
		for _, x := range r.Samples {
			if x.Name == "busy" && !x.HasPSS {
				busyCPU += x.CPUMillicores
			}
		}
	}
	if busyCPU == 0 {
		t.Error("the busy loop has no CPU in the rounds without PSS")
	}

	// The summary takes PSS over the three readings only.
	sum := s.Summary()
	for _, p := range sum.Processes {
		v := pssByName[p.Name]
		if len(v) != 3 {
			t.Fatalf("%s: %d PSS readings, want 3", p.Name, len(v))
		}
		want := Stats{min(v[0], v[1], v[2]), max(v[0], v[1], v[2]), (v[0] + v[1] + v[2]) / 3}
		if p.Rounds != n-1 || p.PSSRounds != 3 || p.PSSBytes != want {
			t.Errorf("%s: %d rounds, PSS over %d: %+v; want %d, 3: %+v", p.Name, p.Rounds, p.PSSRounds, p.PSSBytes, n-1, want)
		}
	}
	if sum.Total.PSSRounds != 3 || sum.Overhead.PSSRounds != 3 || sum.Overhead.PSSEveryRounds != (Stats{3, 3, 3}) {
		t.Errorf("total %+v, overhead %+v; want PSS in 3 rounds, 3 apart", sum.Total, sum.Overhead)
	}
	if sum.Overhead.NoPSSRounds != 5 { // "PSS read every 3 rounds (3 of the 8 rounds with samples)" in report.SamplerOverhead
		t.Errorf("overhead %+v: want 5 rounds with samples and no PSS", sum.Overhead)
	}

	// JSON lines: pss_bytes on the 9 samples that have it, and the same
	// rounds back (times in UTC, without monotonic clock readings).
	if got := strings.Count(out.String(), `"pss_bytes"`); got != 9 {
		t.Errorf("%d pss_bytes keys in the JSON lines, want 9", got)
	}
	back, err := ReadRounds(&out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rounds {
		rounds[i].Time = rounds[i].Time.Round(0).UTC()
		for j := range rounds[i].Samples {
			rounds[i].Samples[j].Time = rounds[i].Samples[j].Time.Round(0).UTC()
		}
	}
	if !reflect.DeepEqual(back, rounds) {
		t.Errorf("rounds read back from the JSON lines differ:\n%+v\nwant\n%+v", back, rounds)
	}
}

func itoa(n int) string {
	return string(appendInt(nil, n))
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// BenchmarkSampleRound200 measures sampling rounds over 200 idle processes
// (real sleeps) plus the sampler's own, JSON lines included: with PSSEvery
// 2, each iteration takes one round that reads PSS (smaps_rollup) and one
// that does not, and reports the CPU of each kind.
func BenchmarkSampleRound200(b *testing.B) {
	const n = 200
	s := New(time.Second, nil)
	s.Out = discard{}
	s.PSSEvery = 2
	for i := 0; i < n; i++ {
		cmd := startProcess(b, "sleep", "300")
		if err := s.Add(Target{cmd.Process.Pid, "sleep-" + itoa(i), "sleep", CategoryApp}); err != nil {
			b.Fatal(err)
		}
	}
	s.SampleNow() // baselines: later rounds are full ones
	// Index 0: rounds without PSS, 1: with.
	var cpu [2]time.Duration
	var rounds [2]int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for range 2 {
			r := s.SampleNow()
			if len(r.Samples) != n+1 {
				b.Fatalf("round %d: %d samples, %d gaps; want %d samples", r.Index, len(r.Samples), len(r.Gaps), n+1)
			}
			k := 0
			if r.HasPSS() {
				k = 1
			}
			cpu[k] += r.Overhead.CPU
			rounds[k]++
		}
	}
	if rounds[0] != b.N || rounds[1] != b.N {
		b.Fatalf("%d rounds without PSS, %d with; want %d of each", rounds[0], rounds[1], b.N)
	}
	perRound := func(k int) float64 { return float64(cpu[k]) / float64(time.Millisecond) / float64(b.N) }
	b.ReportMetric(perRound(1), "cpu-ms/round-pss")
	b.ReportMetric(perRound(0), "cpu-ms/round-nopss")
	b.ReportMetric(perRound(1)*1000/(n+1), "cpu-µs/process-pss")
	b.ReportMetric(perRound(0)*1000/(n+1), "cpu-µs/process-nopss")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
