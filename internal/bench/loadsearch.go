package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/analysis/slo"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
)

// LoadSearch is `meshbench load --slo`: a capacity search of meshbench's
// own engine against targets, in this process.
type LoadSearch struct {
	// Objective is what a probe must meet; Search how rates are chosen.
	Objective slo.Objective
	Search    capacity.Config
	// Load is the engine's configuration; each probe sets its rate.
	Load loadgen.Config
	// AutoQueue sizes each probe's queue to its rate (at least 1000),
	// as --max-queue -1 asks.
	AutoQueue bool
	// LoadCPUMax is the CPU (fraction of one core) of this process above
	// which a probe counts as limited by the load generator.
	LoadCPUMax float64
	// Probe runs the load once and returns its result and whether it was
	// interrupted.
	Probe func(context.Context, loadgen.Config) (*results.LoadResult, bool, error)
	// Output, when not nil, is rewritten with every probe so far
	// (OutputName names it in errors).
	Output     *os.File
	OutputName string
	// Version is meshbench's version, recorded in the output; Stdout gets
	// the header, one line per probe and the capacity.
	Version string
	Stdout  io.Writer
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RunLoadSearch runs a capacity search: probes chosen by capacity.Next,
// each a full run of the engine, printed as it ends; the output gets every
// probe. An interrupted search writes what it has and returns
// ErrInterrupted.
func RunLoadSearch(ctx context.Context, s LoadSearch) error {
	obj, sc, cfg, outFile := s.Objective, s.Search, s.Load, s.Output
	doc := &capacity.LoadSearch{Schema: capacity.LoadSearchSchema, MeshbenchVersion: s.Version, Objective: obj.String(), Search: sc}
	for _, t := range cfg.Targets {
		doc.Targets = append(doc.Targets, t.Raw)
	}
	confirm := ""
	if sc.Confirm {
		confirm = ", a miss or generator limit probed twice"
	}
	fmt.Fprintf(s.Stdout, "Capacity search: highest open-loop rate meeting %s, from %s/s to %s/s (×%g, then bisect to %s%s); %d connections, %s per probe after %s warm-up, timeout %s\n",
		obj.Human(), capacity.FormatRate(sc.From), capacity.FormatRate(sc.To), sc.Growth, slo.FormatRatio(sc.Precision), confirm,
		cfg.Connections, report.Dur(cfg.Duration), report.Dur(cfg.Warmup), report.Dur(cfg.Timeout))
	var probes []capacity.Probe
	var unloaded float64 // the first probe's mean service time
	write := func() error {
		if outFile == nil {
			return nil
		}
		if _, err := outFile.Seek(0, 0); err != nil {
			return err
		}
		if err := outFile.Truncate(0); err != nil {
			return err
		}
		return doc.Write(outFile)
	}
	for {
		rate, done, res := capacity.Next(sc, probes)
		if done {
			doc.Result = &res
			break
		}
		pc := cfg
		r, err := loadgen.RateOf(rate)
		if err != nil {
			return fmt.Errorf("probe rate %v: %w", rate, err)
		}
		pc.Load = loadgen.OpenLoop(r)
		if s.AutoQueue {
			pc.MaxQueue = max(1000, int(math.Ceil(rate)))
		}
		cpu0, wall0 := cpuTime(), time.Now()
		lr, interrupted, err := s.Probe(ctx, pc)
		if err != nil {
			if errors.Is(err, ErrInterrupted) || ctx.Err() != nil {
				doc.Interrupted = true
				_ = write()
				return ErrInterrupted
			}
			return fmt.Errorf("probe at %s/s: %w", capacity.FormatRate(rate), err)
		}
		loadCPU := (cpuTime() - cpu0).Seconds() / time.Since(wall0).Seconds()
		if len(probes) == 0 {
			unloaded = lr.ServiceMeanNs() // the first probe, at the lowest rate
		}
		out := slo.Evaluate(obj, slo.Input{Load: lr, LoadCPU: loadCPU, LoadCPUMax: s.LoadCPUMax, UnloadedServiceNs: unloaded})
		p := capacity.ProbeOf(rate, out)
		probes = append(probes, p)
		doc.Probes = append(doc.Probes, capacity.ProbeRun{Index: len(probes), Probe: p, Outcome: out, LoadCPU: loadCPU, Load: lr})
		fmt.Fprintln(s.Stdout, report.ProbeLine(len(probes), out, loadCPU))
		if interrupted {
			doc.Interrupted = true
			_ = write()
			return ErrInterrupted
		}
		if err := write(); err != nil {
			return fmt.Errorf("writing %s: %w", s.OutputName, err)
		}
	}
	fmt.Fprintf(s.Stdout, "Capacity at %s: %s, %d probes\n", obj.Human(), doc.Result, doc.Result.Probes)
	if err := write(); err != nil {
		return fmt.Errorf("writing %s: %w", s.OutputName, err)
	}
	if outFile != nil {
		if err := outFile.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", s.OutputName, err)
		}
	}
	return nil
}
