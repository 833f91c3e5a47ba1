package results

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// external returns a result as an external generator leaves it: its
// histograms may hold fewer values than completed (failed requests the
// tool keeps no timing for).
func external(t *testing.T, seed uint64, name string) *LoadResult {
	t.Helper()
	r := encode(t, fakeRun(seed, 10, time.Unix(1_700_000_000, 0)))
	r.Generator = &Generator{Name: name, Version: "1.16.0", Commands: []string{name + " -q 10 http://x/"},
		Histograms: "exact: from oha's 10 per-request records", Notes: []string{"schedule_lag: known"}}
	return r
}

// TestGeneratorPartialHistograms: a result whose generator says its
// histograms are partial may hold fewer latencies than completed, never
// more; without the flag they must match, as for meshbench's engine.
func TestGeneratorPartialHistograms(t *testing.T) {
	r := external(t, 1, "oha")
	r.Completed += 3 // three failed requests without timing
	r.Sent += 3
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "latency histogram holds 10 values but completed is 13") {
		t.Errorf("check without partial_histograms: %v", err)
	}
	r.Generator.PartialHistograms = true
	if err := r.Check(); err != nil {
		t.Errorf("check with partial_histograms: %v", err)
	}
	r.Completed, r.Sent, r.Success = 5, 5, 5
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "more than the 5 completed") {
		t.Errorf("more latencies than requests: %v", err)
	}
}

// TestMergeGenerators: workers of one generator merge, their command lines
// kept; results of different generators (or of a generator and
// meshbench's engine) do not, since their figures mean different things.
func TestMergeGenerators(t *testing.T) {
	a, b := external(t, 1, "oha"), external(t, 2, "oha")
	b.Generator.Commands = []string{"oha -q 20 http://x/"}
	b.Generator.PartialHistograms = true
	b.Generator.Notes = append(b.Generator.Notes, "another note")
	m, err := Merge([]*LoadResult{a, b})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Generator
	if g.Name != "oha" || len(g.Commands) != 2 || g.Commands[1] != "oha -q 20 http://x/" || !g.PartialHistograms || len(g.Notes) != 2 {
		t.Errorf("merged generator %+v", g)
	}
	if a.Generator.Commands[0] != "oha -q 10 http://x/" || len(a.Generator.Commands) != 1 {
		t.Errorf("merge changed its part: %+v", a.Generator)
	}
	// Descriptions holding "; " (vegeta's) are listed once each, not
	// once per worker; a different one is added.
	vegeta := "exact: from vegeta's 10 per-request results (vegeta encode --to csv), to the nanosecond; answered requests only"
	parts := []*LoadResult{external(t, 1, "vegeta"), external(t, 2, "vegeta"), external(t, 3, "vegeta")}
	for _, p := range parts[:2] {
		p.Generator.Histograms = vegeta
	}
	parts[2].Generator.Histograms = "exact: from vegeta's 9 per-request results"
	if m, err := Merge(parts); err != nil {
		t.Error(err)
	} else if m.Generator.Histograms != vegeta+"; exact: from vegeta's 9 per-request results" {
		t.Errorf("merged histograms description %q, want each once", m.Generator.Histograms)
	}
	for _, tt := range []struct {
		name  string
		parts []*LoadResult
		want  string
	}{
		{"oha and wrk2", []*LoadResult{external(t, 1, "oha"), external(t, 2, "wrk2")}, "part 2 was measured by wrk2 1.16.0 but part 1 by oha 1.16.0"},
		{"engine and oha", []*LoadResult{encode(t, fakeRun(1, 10, time.Unix(0, 0))), external(t, 2, "oha")}, "part 2 was measured by oha 1.16.0 but part 1 by meshbench's engine"},
		{"oha and engine", []*LoadResult{external(t, 1, "oha"), encode(t, fakeRun(2, 10, time.Unix(0, 0)))}, "part 2 was measured by meshbench's engine but part 1 by oha"},
	} {
		if _, err := Merge(tt.parts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestGeneratorMatchesJSONSchema: the generator block is in the schema.
func TestGeneratorMatchesJSONSchema(t *testing.T) {
	sch, err := jsonschema.NewCompiler().Compile("../../schema/load-result.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	r := external(t, 3, "wrk2")
	r.Generator.PartialHistograms = true
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("result does not match its schema: %v", err)
	}
}

// TestAttackDurationWithoutSendTimes: a generator that reports no send
// times (wrk2) has its window as attack duration, so rates are not 0.
func TestAttackDurationWithoutSendTimes(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	r := &LoadResult{Sent: 100, StartedAt: start, EndedAt: start.Add(10 * time.Second), Generator: &Generator{Name: "wrk2"}}
	if got := r.AttackDuration(); got != 10*time.Second {
		t.Errorf("attack %v, want the 10s window", got)
	}
	if got := r.AchievedRatePerSec(); got != 10 {
		t.Errorf("rate %v, want 10/s", got)
	}
	r.Generator = nil // meshbench's engine always has send times
	if got := r.AttackDuration(); got != 0 {
		t.Errorf("engine result without send times: attack %v", got)
	}
}
