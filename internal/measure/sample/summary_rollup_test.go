package sample

import (
	"strings"
	"testing"
	"time"
)

// TestRollup: the seed reports' per-namespace table from cluster-named
// samples: each namespace summed per round, min/max/avg over the rounds it
// had samples in (a round without any is skipped, not a zero), the samples
// mapped to "" left out, and the total of what was kept summed per round.
func TestRollup(t *testing.T) {
	s := func(name string, cpu float64, mem uint64) Sample {
		return Sample{Target: Target{PID: 1, Name: name, Component: "c", Category: CategoryApp}, CPUMillicores: cpu, PSSBytes: mem, HasPSS: true}
	}
	t0 := time.Unix(100, 0)
	rounds := []Round{
		{Index: 0, Time: t0, Samples: []Sample{s("app/a-0/app", 10, 100), s("app/a-1/app", 20, 100), s("linkerd/d-0/x", 2, 50), s("kube-system/dns/c", 99, 99)}},
		{Index: 1, Time: t0.Add(time.Second), Samples: []Sample{s("app/a-0/app", 30, 100), s("app/a-1/app", 40, 100)}},
	}
	ns := func(x Sample) string {
		n, _, _ := strings.Cut(x.Name, "/")
		if n == "kube-system" {
			return ""
		}
		return n
	}
	groups, total := Rollup(rounds, ns)
	if len(groups) != 2 || groups[0].Name != "app" || groups[1].Name != "linkerd" {
		t.Fatalf("groups %+v", groups)
	}
	app, l5d := groups[0], groups[1]
	if app.Rounds != 2 || app.CPUMillicores != (Stats{Min: 30, Max: 70, Avg: 50}) || app.PSSBytes.Avg != 200 || app.Processes != 2 {
		t.Errorf("app: %+v", app)
	}
	// linkerd had a sample in one round only: its figures are over that one.
	if l5d.Rounds != 1 || l5d.CPUMillicores != (Stats{Min: 2, Max: 2, Avg: 2}) {
		t.Errorf("linkerd: %+v", l5d)
	}
	// kube-system left out of the total too.
	if total.Rounds != 2 || total.CPUMillicores != (Stats{Min: 32, Max: 70, Avg: 51}) || total.PSSBytes.Max != 250 {
		t.Errorf("total: %+v", total)
	}
	if g, tot := Rollup(nil, ns); len(g) != 0 || tot.Rounds != 0 {
		t.Errorf("no rounds: %+v %+v", g, tot)
	}
}

// TestNamespaces: the rows in the order asked for (one without samples
// kept, with no rounds), TOTAL over them only, the load apart.
func TestNamespaces(t *testing.T) {
	s := func(name string, cpu float64) Sample {
		return Sample{Target: Target{PID: 1, Name: name, Component: "c", Category: CategoryApp}, CPUMillicores: cpu}
	}
	rounds := []Round{{Samples: []Sample{s("app/a/app", 10), s("linkerd/d/x", 2), s("load/l/load", 5), s("istio-system/i/x", 7)}}}
	tb := Namespaces(rounds, []string{"linkerd", "gone", "app"}, "load")
	if len(tb.Rows) != 3 || tb.Rows[0].Name != "linkerd" || tb.Rows[1].Name != "gone" || tb.Rows[1].Rounds != 0 || tb.Rows[2].CPUMillicores.Avg != 10 {
		t.Errorf("rows %+v", tb.Rows)
	}
	if tb.Total.CPUMillicores.Avg != 12 || tb.Load == nil || tb.Load.CPUMillicores.Avg != 5 {
		t.Errorf("total %+v, load %+v", tb.Total, tb.Load)
	}
	if Namespaces(rounds, []string{"app"}, "").Load != nil {
		t.Error("a load row without a load namespace")
	}
}
