package threshold

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/results"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    []Condition // nil: an error naming wantErr
		wantErr string
	}{
		// the example: a duration and a percentage
		{"p99>5ms,errors>0.1%", []Condition{{"p99", ">", 5e6, "p99>5ms"}, {"errors", ">", 0.001, "errors>0.1%"}}, ""},
		// spaces, >= and <=, a fraction, a rate floor
		{" p99.9 >= 1s , dropped<=0.02, rate<990", []Condition{{"p99.9", ">=", 1e9, "p99.9 >= 1s"},
			{"dropped", "<=", 0.02, "dropped<=0.02"}, {"rate", "<", 990, "rate<990"}}, ""},
		// no operator
		{"p99", nil, "allowed: METRIC>VALUE"},
		// unknown metric
		{"p42>1ms", nil, `metric "p42"`},
		// a latency without a unit
		{"p99>5", nil, "p99 needs a duration"},
		// a percentage above 100
		{"errors>150%", nil, "percentage"},
		// empty
		{" , ", nil, "no condition"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) error %v, want one naming %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Fatalf("Parse(%q) = %v, %v", tt.in, got, err)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("Parse(%q)[%d] = %+v, want %+v", tt.in, i, got[i], tt.want[i])
			}
		}
	}
}

// result: 1000 requests, latencies 1..1000 µs (p99 ≈ 990 µs, max 1 ms),
// 5 failed (0.5%).
func result(t *testing.T) *results.LoadResult {
	tg, _ := loadgen.ParseTarget("http://127.0.0.1:8080/", false)
	r := &loadgen.Result{
		Config: loadgen.Config{Targets: []loadgen.Target{tg}, Load: loadgen.OpenLoopPerSecond(100), Duration: 10 * time.Second},
		Start:  time.Unix(0, 0), Scheduled: 1000, Sent: 1000, Completed: 1000, Success: 995, LastSend: 10 * time.Second,
		Codes: map[int]int64{200: 995, 503: 5}, Errors: map[loadgen.ErrorKey]int64{},
		Latency: latency.NewRecorder(), ServiceTime: latency.NewRecorder(), ScheduleLag: latency.NewRecorder(),
	}
	for i := int64(1); i <= 1000; i++ {
		r.Latency.Record(i * 1000)
	}
	out, err := results.FromRun(r, "test")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCrossed(t *testing.T) {
	r := result(t)
	tests := []struct {
		conds   string
		crossed []string // the conditions that hold, in order
	}{
		// p99 ≈ 990 µs is above 500 µs; 0.5% errors is above 0.1%
		{"p99>500us,errors>0.1%", []string{"p99>500us", "errors>0.1%"}},
		// both within their limits: the run passes
		{"p99>5ms,errors>1%", nil},
		// max is exactly 1 ms: > does not hold, >= does
		{"max>1ms,max>=1ms", []string{"max>=1ms"}},
		// 100/s achieved: a floor of 990/s is crossed, one of 50/s is not
		{"rate<990,rate<50", []string{"rate<990"}},
	}
	for _, tt := range tests {
		conds, err := Parse(tt.conds)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Crossed(r, conds)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tt.crossed) {
			t.Errorf("%s: crossed %q, want %q", tt.conds, got, tt.crossed)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.crossed[i]+": ") {
				t.Errorf("%s: line %q, want it for %q", tt.conds, got[i], tt.crossed[i])
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99>5ms,errors>0.1%", "rate<=990", "max>=", ">", "errors>1e309%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		conds, err := Parse(s)
		if err == nil && len(conds) == 0 {
			t.Errorf("Parse(%q): no condition and no error", s)
		}
	})
}
