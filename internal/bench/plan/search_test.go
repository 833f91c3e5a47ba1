package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/analysis/slo"
)

func TestSearchPlan(t *testing.T) {
	p, err := Parse("s.yaml", []byte("axes:\n  mesh: [none, sidecar]\nsearch: {slo: {p99: 5ms, errors: 0.1%}, from: 100, to: 50000, precision: 5%}\nrepetitions: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Search == nil || p.Search.Objective.String() != "p99<=5ms,errors<=0.1%" ||
		p.Search.Config.From != 100 || p.Search.Config.To != 50000 || p.Search.Config.Precision != 0.05 || p.Search.Config.Growth != 2 {
		t.Fatalf("search %+v", p.Search)
	}
	// Search-mode defaults for the probes' timing.
	if p.Duration != DefaultSearchDuration || p.Warmup != DefaultSearchWarmup || p.Drain != DefaultSearchDrain {
		t.Errorf("probe timing %v/%v/%v", p.Duration, p.Warmup, p.Drain)
	}
	// The canonical YAML reads back to the same plan.
	back, err := Parse("back.yaml", p.YAML())
	if err != nil {
		t.Fatalf("%v\n%s", err, p.YAML())
	}
	if string(back.YAML()) != string(p.YAML()) {
		t.Errorf("round trip:\n%s\nvs\n%s", back.YAML(), p.YAML())
	}
	// The same from flags.
	fp, err := FromFlags(Flags{Mesh: "none,sidecar", SLO: "p99<=5ms,errors<=0.1%", SearchFrom: "100", SearchTo: "50000", Repetitions: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if string(fp.YAML()) != string(p.YAML()) {
		t.Errorf("flags and file differ:\n%s\nvs\n%s", fp.YAML(), p.YAML())
	}
	// Rounds: one per repetition, every configuration once, in a seeded order.
	r1, r2 := p.Searches(7), p.Searches(7)
	if len(r1) != 2 || len(r1[0]) != 2 || len(r1[1]) != 2 {
		t.Fatalf("rounds %+v", r1)
	}
	for i := range r1 {
		for j := range r1[i] {
			if r1[i][j].ID != r2[i][j].ID {
				t.Errorf("seed 7 gives different orders")
			}
		}
	}
	if r1[0][0].ID != r1[0][0].Config+"-rep1" || !strings.Contains(r1[0][0].Config, "-rsearch-") {
		t.Errorf("search ID %q config %q", r1[0][0].ID, r1[0][0].Config)
	}
	if id, n, ok := ParseProbeID(ProbeID(r1[0][0].ID, 12)); !ok || id != r1[0][0].ID || n != 12 {
		t.Errorf("ParseProbeID: %q %d %v", id, n, ok)
	}
	// The app bound.
	b, err := Parse("b.yaml", []byte("app_concurrency: 4\napp_service_time: 2ms\n"))
	if err != nil || b.AppConcurrency != 4 || b.AppServiceTime != 2*time.Millisecond {
		t.Errorf("app bound: %+v %v", b, err)
	}
}

func TestSearchPlanProblems(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		// A term without a value.
		{"p99<=", "search:\n  slo: 'p99<='\n  from: 100\n  to: 200\n", []string{`s.yaml:2: search.slo: p99<=: missing value: allowed: comma-separated NAME<=VALUE terms: a latency percentile p0.1 to p99.999 or max with a duration ("p99<=5ms"), errors with a percentage 0% to 100% or a fraction ("errors<=0.1%")`}},
		// A percentile above 100, as a mapping.
		{"p101", "search:\n  slo:\n    p101: 1ms\n  from: 100\n  to: 200\n", []string{`s.yaml:3: search.slo: p101<=1ms: allowed percentiles: p0.1 to p99.999 (below 100) or max`}},
		// An error ratio above 100%.
		{"errors 150%", "search:\n  slo: {errors: 150%}\n  from: 100\n  to: 200\n", []string{`s.yaml:2: search.slo: errors<=150%: allowed: a percentage 0% to 100% ("0.1%") or a fraction 0 to 1`}},
		// from ≥ to.
		{"from >= to", "search:\n  slo: {p99: 5ms}\n  from: 500\n  to: 100\n", []string{`s.yaml:4: search.to "100": allowed: a rate above search.from (500)`}},
		// Precision 0.
		{"precision 0", "search:\n  slo: {p99: 5ms}\n  from: 100\n  to: 200\n  precision: 0\n", []string{`s.yaml:5: search.precision "0": allowed: above 0% and below 100%, such as 5% or 0.05`}},
		// No objective, no bounds.
		{"no slo", "search:\n  precision: 5%\n", []string{
			`s.yaml:1: search.slo: a search needs an objective, such as {p99: 5ms, errors: 0.1%}`,
			`s.yaml:1: search.from: a search needs it: the first rate probed, per second`,
			`s.yaml:1: search.to: a search needs it: the highest rate probed, per second`}},
		// A rate axis with a search.
		{"rate axis", "axes:\n  rate: [100]\nsearch: {slo: {p99: 5ms}, from: 100, to: 200}\n", []string{`s.yaml:2: axes.rate: a search chooses its rates (search.from to search.to); remove axes.rate`}},
		// A bound without a service time.
		{"app bound", "app_concurrency: 4\n", []string{`s.yaml:1: app_concurrency 4: needs app_service_time too (each request's time in service)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			if got := err.Error(); got != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestProbeTimeout: four times the objective's largest latency limit,
// within 1 s to 2 s.
func TestProbeTimeout(t *testing.T) {
	for _, tt := range []struct {
		slo  string
		want time.Duration
	}{
		{"errors<=0.1%", 2 * time.Second},                  // no latency bound: the most
		{"p99<=5ms", time.Second},                          // 20 ms is raised to the floor
		{"p99<=300ms", 1200 * time.Millisecond},            // four times the limit
		{"p50<=100ms,p99<=400ms", 1600 * time.Millisecond}, // the largest limit counts
		{"p99<=2s", 2 * time.Second},                       // capped
	} {
		o, err := slo.Parse(tt.slo)
		if err != nil {
			t.Fatalf("%s: %v", tt.slo, err)
		}
		if got := ProbeTimeout(o); got != tt.want {
			t.Errorf("ProbeTimeout(%s) = %v; want %v", tt.slo, got, tt.want)
		}
	}
}
