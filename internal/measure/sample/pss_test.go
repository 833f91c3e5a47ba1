package sample

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestSamplerPSSEvery checks the PSS schedule on a fake /proc: the first
// round with samples reads PSS, then every PSSEvery-th round; the other
// rounds' samples say they have no PSS, smaps_rollup is not read for them
// nor for baselines, and the summary counts only the rounds that read it.
func TestSamplerPSSEvery(t *testing.T) {
	s, clock, procs := newFakeSampler()
	s.PSSEvery = 3
	var out bytes.Buffer
	s.Out = &out
	procs.procs[1000] = &fakeProc{ProcSample: ProcSample{StartTicks: 1, RSSBytes: 30 * mi, PSSBytes: 20 * mi}}
	for pid := 1; pid <= 3; pid++ {
		procs.procs[pid] = &fakeProc{ProcSample: ProcSample{StartTicks: 1, RSSBytes: uint64(pid) * 10 * mi, PSSBytes: uint64(pid) * mi}}
	}
	for _, tg := range []Target{{1, "a-0", "a", CategoryApp}, {2, "a-1", "a", CategoryApp}} {
		if err := s.Add(tg); err != nil {
			t.Fatal(err)
		}
	}
	wantPSS := []bool{false, true, false, false, true, false, false, true, false}
	for i := range wantPSS {
		if i == 5 { // a late process: baseline in round 5
			if err := s.Add(Target{3, "late", "late", CategoryLoad}); err != nil {
				t.Fatal(err)
			}
		}
		before := procs.pssReads[3]
		clock.Advance(time.Second)
		for _, p := range procs.procs {
			p.CPUTicks += 5
			p.PSSBytes += 1 << 10 // a new value every round: none may be carried
		}
		r := s.SampleNow()
		if r.HasPSS() != wantPSS[i] {
			t.Errorf("round %d: HasPSS = %v, want %v", i, r.HasPSS(), wantPSS[i])
		}
		for _, x := range r.Samples {
			want := procs.procs[x.PID].PSSBytes
			if !wantPSS[i] {
				want = 0
			}
			if x.HasPSS != wantPSS[i] || x.PSSBytes != want || x.RSSBytes == 0 {
				t.Errorf("round %d, %s: PSS %d (HasPSS %v), RSS %d; want PSS %d (HasPSS %v)", i, x.Name, x.PSSBytes, x.HasPSS, x.RSSBytes, want, wantPSS[i])
			}
		}
		if i == 5 && procs.pssReads[3] != before {
			t.Error("smaps_rollup read for a baseline")
		}
	}
	if got := procs.pssReads[1]; got != 3 {
		t.Errorf("smaps_rollup of PID 1 read %d times in 9 rounds, want 3 (rounds 1, 4, 7)", got)
	}
	if got := procs.pssReads[3]; got != 1 {
		t.Errorf("smaps_rollup of the late process read %d times, want 1 (round 7)", got)
	}

	sum := s.Summary()
	for _, p := range sum.Processes {
		wantRounds, wantPSSRounds := 8, 3
		if p.PID == 3 {
			wantRounds, wantPSSRounds = 3, 1
		}
		if p.Rounds != wantRounds || p.PSSRounds != wantPSSRounds {
			t.Errorf("%s: %d rounds, %d with PSS; want %d and %d", p.Name, p.Rounds, p.PSSRounds, wantRounds, wantPSSRounds)
		}
	}
	// PID 1's PSS: 1Mi plus 1Ki per round, read in rounds 1, 4, 7.
	if p := sum.Processes[0]; p.PID != 1 || p.PSSBytes != (Stats{mi + 2<<10, mi + 8<<10, mi + 5<<10}) {
		t.Errorf("a-0 PSS = %+v, want 1Mi + {2, 8, 5} Ki", p.PSSBytes)
	}
	if sum.Total.Rounds != 8 || sum.Total.PSSRounds != 3 {
		t.Errorf("total: %d rounds, %d with PSS; want 8 and 3", sum.Total.Rounds, sum.Total.PSSRounds)
	}
	o := sum.Overhead
	if o.PSSRounds != 3 || o.NoPSSRounds != 5 || o.PSSEveryRounds != (Stats{3, 3, 3}) {
		t.Errorf("overhead PSS figures = %+v", o)
	}
	if o.RoundCPUNsPSS.Avg != 0.25e6 || o.RoundCPUNsNoPSS.Avg != 0.25e6 { // report.TestSamplerOverheadPSSEvery renders these
		t.Errorf("overhead CPU per round with and without PSS = %v, %v; want 0.25ms each", o.RoundCPUNsPSS.Avg, o.RoundCPUNsNoPSS.Avg)
	}
	// The JSON lines hold the same rounds, and pss_bytes only where read.
	back, err := ReadRounds(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s.Rounds()) {
		t.Error("rounds read back from the JSON lines differ")
	}
	if n := strings.Count(out.String(), `"pss_bytes"`); n != 3*3+1 {
		t.Errorf("%d pss_bytes keys, want 10 (3 processes × 3 rounds + the late one once)", n)
	}
}

// TestSamplerPSSFirstSamples: PSS stays due until a round yields samples,
// however late (here the only target fails, then needs a new baseline).
func TestSamplerPSSFirstSamples(t *testing.T) {
	s, clock, procs := newFakeSampler()
	s.Self.PID = 0
	s.PSSEvery = 2
	procs.procs[1] = &fakeProc{ProcSample: ProcSample{StartTicks: 1, RSSBytes: mi, PSSBytes: mi}}
	if err := s.Add(Target{1, "x", "x", CategoryApp}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 6; i++ {
		procs.procs[1].err = nil
		if i == 1 {
			procs.procs[1].err = errors.New("permission denied")
		}
		clock.Advance(time.Second)
		procs.procs[1].CPUTicks++
		r := s.SampleNow()
		got = append(got, map[bool]string{true: "pss", false: "-"}[r.HasPSS()]+"/"+itoa(len(r.Samples)))
	}
	// 0: baseline; 1: read error; 2: new baseline; 3: first sample.
	if want := []string{"-/0", "-/0", "-/0", "pss/1", "-/1", "pss/1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rounds (PSS/samples) = %v, want %v", got, want)
	}
}

// TestSummarizePSSRounds checks the PSS rule on hand-made rounds: per
// process, the rounds it has a PSS reading; per group and in total, the
// rounds in which every sample summed has one.
func TestSummarizePSSRounds(t *testing.T) {
	a := Target{1, "a-0", "a", CategoryApp}
	b := Target{2, "a-1", "a", CategoryApp}
	c := Target{3, "sc", "sidecar", CategoryDataPlane}
	d := Target{4, "load", "load", CategoryLoad}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	smp := func(tg Target, pss uint64) Sample { // RSS 1000 + PSS
		return Sample{Target: tg, CPUMillicores: 10, RSSBytes: 1000 + pss, PSSBytes: pss, HasPSS: true}
	}
	none := func(tg Target) Sample { return Sample{Target: tg, CPUMillicores: 10, RSSBytes: 1000} }
	round := func(i int, cpuMs int, samples ...Sample) Round {
		return Round{Index: i, Time: t0.Add(time.Duration(i) * time.Second), Samples: samples,
			Overhead: Overhead{CPU: time.Duration(cpuMs) * time.Millisecond, Processes: 4}}
	}
	rounds := []Round{
		round(0, 1), // baselines
		round(1, 10, smp(a, 100), smp(b, 200), smp(c, 50)),
		round(2, 2, none(a), none(b), none(c), none(d)),
		round(3, 3, smp(a, 110), none(b), smp(c, 70)), // mixed: no group PSS with b
		round(4, 12, smp(a, 130), smp(c, 60)),         // b has a gap
		round(5, 2, none(a), none(b), none(c)),
	}
	rounds[4].Gaps = []Gap{{Target: b, Time: rounds[4].Time, Reason: "read error: x"}}
	s := Summarize(rounds)

	procs := map[int]Figures{}
	for _, p := range s.Processes {
		procs[p.PID] = p.Figures
	}
	groups := map[string]Figures{}
	for _, g := range append(s.Components, s.Categories...) {
		groups[g.Name] = g.Figures
	}
	for _, tt := range []struct {
		what      string
		got       Figures
		rounds    int
		pssRounds int
		pss       Stats
	}{
		{"process a-0", procs[1], 5, 3, Stats{100, 130, 340.0 / 3}},
		{"process a-1", procs[2], 4, 1, Stats{200, 200, 200}},
		{"process sc", procs[3], 5, 3, Stats{50, 70, 60}},
		{"process load", procs[4], 1, 0, Stats{}},
		// a-0 + a-1: round 1 (300) and round 4 (a-0 alone, like its CPU);
		// round 3 mixes a reading with none, so it is left out.
		{"component a", groups["a"], 5, 2, Stats{130, 300, 215}},
		{"category app", groups[CategoryApp], 5, 2, Stats{130, 300, 215}},
		{"category data-plane", groups[CategoryDataPlane], 5, 3, Stats{50, 70, 60}},
		{"component load", groups["load"], 1, 0, Stats{}},
		// Total: round 1 (350) and round 4 (190).
		{"total", s.Total, 5, 2, Stats{190, 350, 270}},
	} {
		if tt.got.Rounds != tt.rounds || tt.got.PSSRounds != tt.pssRounds || tt.got.PSSBytes != tt.pss {
			t.Errorf("%s: %d rounds, PSS over %d: %+v; want %d, %d: %+v", tt.what,
				tt.got.Rounds, tt.got.PSSRounds, tt.got.PSSBytes, tt.rounds, tt.pssRounds, tt.pss)
		}
	}
	// RSS is still over every round: component a is 2300, 2000, 2110, 1130, 2000.
	if g := groups["a"]; g.RSSBytes != (Stats{1130, 2300, 9540.0 / 5}) {
		t.Errorf("component a RSS = %+v", g.RSSBytes)
	}
	// Rounds 1 and 4 read PSS; 2, 3 and 5 have samples without it.
	o := s.Overhead
	ms := float64(time.Millisecond)
	if o.PSSRounds != 2 || o.NoPSSRounds != 3 || o.PSSEveryRounds != (Stats{3, 3, 3}) ||
		o.RoundCPUNsPSS != (Stats{10 * ms, 12 * ms, 11 * ms}) || o.RoundCPUNsNoPSS != (Stats{2 * ms, 3 * ms, 7 * ms / 3}) {
		t.Errorf("overhead = %+v", o)
	}
	// report.TestResourceTablePSSEvery and TestSamplerOverheadWording
	// render these figures.
}

// TestJSONLinesPSS: a sample without PSS has no pss_bytes key (or a null
// one) and reads back without PSS; a measured PSS, even 0, reads back as
// one.
func TestJSONLinesPSS(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	a := Target{1, "a", "a", CategoryApp}
	b := Target{2, "b", "b", CategoryApp}
	rounds := []Round{
		{Index: 1, Time: t0, Samples: []Sample{
			{Target: a, Time: t0, CPUMillicores: 10, RSSBytes: 300, PSSBytes: 100, HasPSS: true},
			{Target: b, Time: t0, CPUMillicores: 20, RSSBytes: 400, PSSBytes: 0, HasPSS: true},
		}, Overhead: Overhead{CPU: 5, Processes: 2}},
		{Index: 2, Time: t0.Add(time.Second), Samples: []Sample{
			{Target: a, Time: t0.Add(time.Second), CPUMillicores: 10, RSSBytes: 300},
			{Target: b, Time: t0.Add(time.Second), CPUMillicores: 20, RSSBytes: 400},
		}, Overhead: Overhead{CPU: 1, Processes: 2}},
	}
	var out bytes.Buffer
	for _, r := range rounds {
		if err := WriteRound(&out, r); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6:\n%s", len(lines), out.String())
	}
	for i, want := range []string{`"pss_bytes":100,`, `"pss_bytes":0,`, "", "", "", ""} {
		if has := strings.Contains(lines[i], `"pss_bytes"`); has != (want != "") || !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s; want pss_bytes %q", i+1, lines[i], want)
		}
	}
	back, err := ReadRounds(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rounds) {
		t.Errorf("read back:\n%+v\nwant\n%+v", back, rounds)
	}
	if !reflect.DeepEqual(Summarize(back), Summarize(rounds)) {
		t.Error("summary of the rounds read back differs")
	}
	// null reads as no reading.
	back, err = ReadRounds(strings.NewReader(`{"t_unix_ns":1,"round":0,"pid":1,"name":"a","component":"a","category":"app","cpu_millicores":1,"rss_bytes":2,"pss_bytes":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if x := back[0].Samples[0]; x.HasPSS || x.PSSBytes != 0 || x.RSSBytes != 2 {
		t.Errorf("pss_bytes null read as %+v", x)
	}
}

func TestPSSEveryFor(t *testing.T) {
	for _, tt := range []struct {
		interval time.Duration
		want     int
	}{
		{time.Second, 5}, {0, 5}, {200 * time.Millisecond, 25}, {250 * time.Millisecond, 20},
		{2 * time.Second, 3}, {3 * time.Second, 2}, {4 * time.Second, 1}, {10 * time.Second, 1}, {1500 * time.Millisecond, 3},
	} {
		if got := PSSEveryFor(tt.interval, DefaultPSSPeriod); got != tt.want {
			t.Errorf("PSSEveryFor(%v, 5s) = %d, want %d", tt.interval, got, tt.want)
		}
	}
}
