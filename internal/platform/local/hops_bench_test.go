package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/report"
)

// TestBenchHopsCost measures what hop timing costs and prints the
// waterfalls: per topology, cells with and without --hops in interleaved
// rounds (off, on, off, on… so drift does not pass for the cost), each
// proxy's CPU per 1000 requests and the load's p50 latency, medians over
// the rounds, and the differences. Opt-in (it takes minutes):
//
//	MESHBENCH_BENCH_HOPS=1 [RATE=200] [DURATION_SECONDS=10] [ROUNDS=3] \
//	  [MODES=sidecar,ambient,waypoint,faces-sidecar] \
//	  go test -run TestBenchHopsCost -v -timeout 60m ./internal/platform/local/
func TestBenchHopsCost(t *testing.T) {
	if os.Getenv("MESHBENCH_BENCH_HOPS") == "" {
		t.Skip("set MESHBENCH_BENCH_HOPS=1 to measure hop timing's cost (minutes)")
	}
	rate := envOr("RATE", "200")
	secs, _ := strconv.Atoi(envOr("DURATION_SECONDS", "10"))
	rounds, _ := strconv.Atoi(envOr("ROUNDS", "3"))
	modes := strings.Split(envOr("MODES", "sidecar,ambient,waypoint,faces-sidecar"), ",")
	type cellFigures struct {
		p50Ns  []float64
		cpu    map[string][]float64 // proxy → ms CPU per 1000 requests
		waterf string
	}
	figures := map[string]*cellFigures{}
	key := func(mode string, on bool) string { return mode + map[bool]string{false: " off", true: " on"}[on] }
	for r := range rounds {
		for mi, m := range modes {
			for _, on := range []bool{false, true} {
				o := labOptions(t, topology.Mode(strings.TrimPrefix(m, "faces-")), 1, uint8(120+mi))
				if strings.HasPrefix(m, "faces-") {
					o.Mesh.App = topology.AppFaces
				}
				o.Load, o.Duration, o.Warmup, o.Drain = testLoad(t, rate), time.Duration(secs)*time.Second, 2*time.Second, time.Second
				o.SampleInterval = time.Second
				o.Hops = on
				res, err := Run(context.Background(), o)
				if err != nil || res == nil || res.Load == nil {
					t.Fatalf("%s round %d: %v", key(m, on), r, err)
				}
				f := figures[key(m, on)]
				if f == nil {
					f = &cellFigures{cpu: map[string][]float64{}}
					figures[key(m, on)] = f
				}
				f.p50Ns = append(f.p50Ns, float64(res.Load.Latency.P50Ns))
				rps := res.Load.AchievedRatePerSec()
				for _, p := range res.Summary.Processes {
					if res.Topology.Proxy(p.Name) != nil && rps > 0 {
						f.cpu[p.Name] = append(f.cpu[p.Name], p.CPUMillicores.Avg/rps*1000) // ms per 1000 requests
					}
				}
				if on && res.Hops != nil {
					var b bytes.Buffer
					_ = report.HopsText(&b, res.Hops)
					f.waterf = b.String()
				}
				t.Logf("%s round %d: p50 %v, valid %v %v", key(m, on), r+1, time.Duration(res.Load.Latency.P50Ns), res.Manifest.Valid, res.Manifest.Invalid)
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "hop timing's cost at %s rps, %d s cells, %d interleaved rounds (medians):\n", rate, secs, rounds)
	for _, m := range modes {
		off, on := figures[key(m, false)], figures[key(m, true)]
		p0, p1 := median(off.p50Ns), median(on.p50Ns)
		fmt.Fprintf(&out, "  %s: p50 %v off, %v on (%+.0f µs)\n", m, time.Duration(p0).Round(time.Microsecond), time.Duration(p1).Round(time.Microsecond), (p1-p0)/1000)
		names := make([]string, 0, len(off.cpu))
		for n := range off.cpu {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			c0, c1 := median(off.cpu[n]), median(on.cpu[n])
			fmt.Fprintf(&out, "    %-20s CPU per 1000 requests: %4.0f ms off, %4.0f ms on (%+.0f ms, %+.0f%%)\n", n, c0, c1, c1-c0, 100*(c1-c0)/c0)
		}
	}
	for _, m := range modes {
		fmt.Fprintf(&out, "\n%s, last round with --hops:\n%s", m, figures[key(m, true)].waterf)
	}
	t.Log("\n" + out.String())
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
