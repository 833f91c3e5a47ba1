package local

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/workload"
)

// The apps' own measured waits (item 4 of issue 31): every app replica
// runs with a control socket (`serve --control`), its wait figures are
// started again when the measured window opens and read when the load
// ends, and the manifest records them beside the delay asked
// (app_delay_measured beside app_delay), so a result says what the app
// did, not only what it was told.

// resetAppDelays starts every app's wait figures again (the window opens).
func (l *Lab) resetAppDelays(ctx context.Context) {
	for _, a := range l.apps {
		if a.control == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, _ = workload.Control{Path: a.control}.Stats(cctx, true)
		cancel()
	}
}

// AppDelay is one app replica's waits over a cell's measured window, as
// the manifest records them (options.app_delay_measured): durations as Go
// writes them.
type AppDelay struct {
	App     string `json:"app"`
	Answers int64  `json:"answers"`
	Min     string `json:"min"`
	P50     string `json:"p50"`
	P99     string `json:"p99"`
	Max     string `json:"max"`
	// BeyondP50 and BeyondP99 are how far past its planned end a wait
	// ended (the timer's and scheduler's lateness).
	BeyondP50 string `json:"beyond_planned_p50"`
	BeyondP99 string `json:"beyond_planned_p99"`
}

// appDelays reads every app's waits since resetAppDelays: those of the
// apps that waited at all (an app without a delay, a service time or a
// slow-replica fault makes none), in the lab's order. An app it cannot
// read is said in problems.
func (l *Lab) appDelays(ctx context.Context) (out []AppDelay, problems []string) {
	d := func(ns int64) string { return time.Duration(ns).String() }
	for _, a := range l.apps {
		if a.control == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := workload.Control{Path: a.control}.Stats(cctx, false)
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", a.name, err))
			continue
		}
		if s.Answers == 0 {
			continue
		}
		out = append(out, AppDelay{App: a.name, Answers: s.Answers, Min: d(s.Measured.MinNs), P50: d(s.Measured.P50Ns),
			P99: d(s.Measured.P99Ns), Max: d(s.Measured.MaxNs), BeyondP50: d(s.Overshoot.P50Ns), BeyondP99: d(s.Overshoot.P99Ns)})
	}
	return out, problems
}

// recordAppDelays puts the apps' measured waits in the manifest and the
// log, beside what was asked.
func (c *cell) recordAppDelays(ctx context.Context) {
	ds, problems := c.lab.appDelays(ctx)
	for _, p := range problems {
		c.logf("warning: the app's measured delays: %s", p)
	}
	if len(ds) == 0 {
		return
	}
	c.mu.Lock()
	c.manifest.Options["app_delay_measured"] = ds
	c.mu.Unlock()
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s min %s p50 %s p99 %s (%d answers)", d.App, d.Min, d.P50, d.P99, d.Answers))
	}
	asked := "none"
	if f := c.opts.AppFaults; f.Delay > 0 || f.RandomDelay != nil {
		asked = f.Delay.String()
		if f.RandomDelay != nil {
			asked += " + " + f.RandomDelay.String()
		}
	}
	c.logf("app delay: asked %s; measured %s", asked, strings.Join(parts, "; "))
}
