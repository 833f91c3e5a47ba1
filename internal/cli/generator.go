package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/extgen"
	"github.com/meshbench/meshbench/internal/latency"
	"github.com/meshbench/meshbench/internal/loadgen"
	"github.com/meshbench/meshbench/internal/results"
)

// checkGenerator reports why --generator cannot run cfg (nil for
// meshbench's engine, which buildLoadConfig has checked).
func checkGenerator(f *loadFlags, cfg loadgen.Config) error {
	if !slices.Contains(extgen.LoadNames, f.generator) {
		return fmt.Errorf("--generator %q: allowed: %s", f.generator, strings.Join(extgen.LoadNames, ", "))
	}
	if f.generator == extgen.Meshbench {
		if f.generatorPath != "" {
			return errors.New("--generator-path: only with --generator oha, wrk2, vegeta or fortio")
		}
		return nil
	}
	if len(cfg.Targets) == 0 {
		return nil // reported already
	}
	ec := externalConfig(f, cfg)
	return ec.Validate()
}

// externalConfig is the external generator's run of cfg.
func externalConfig(f *loadFlags, cfg loadgen.Config) extgen.Config {
	c := extgen.Config{Generator: f.generator, Path: f.generatorPath, Load: cfg, TLSFiles: f.tls,
		Threads: f.cpus, Version: Version, Now: cfg.Now}
	if f.output != "" {
		switch f.generator {
		case extgen.Vegeta: // vegeta's own results beside the report, for vegeta report / plot
			c.KeepResults = f.output + ".vegeta.bin"
		case extgen.Fortio: // fortio's own JSON beside the report
			c.KeepResults = f.output + ".fortio.json"
		}
	}
	return c
}

// runGenerator runs the load with --generator and returns its result and
// whether it was interrupted.
func runGenerator(ctx context.Context, f *loadFlags, cfg loadgen.Config, prog *progressLine) (*results.LoadResult, bool, error) {
	if f.generator != extgen.Meshbench {
		out, err := extgen.Run(ctx, externalConfig(f, cfg))
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, errInterrupted
			}
			return nil, false, err
		}
		return out, out.Interrupted, nil
	}
	res, err := loadgen.Run(ctx, cfg)
	if prog != nil {
		prog.clear()
	}
	if err != nil {
		return nil, false, err
	}
	if f.hlog != "" {
		if err := writeHlog(f.hlog, res); err != nil {
			return nil, false, err
		}
	}
	out, err := results.FromRun(res, Version)
	if err != nil {
		return nil, false, err
	}
	return out, res.Interrupted, nil
}

// writeHlog writes res's per-interval histograms as an HdrHistogram
// interval log: three lines per interval, tagged latency, service and lag.
func writeHlog(path string, res *loadgen.Result) error {
	var ivs []latency.LogInterval
	for _, iv := range res.Intervals {
		start, end := res.Start.Add(iv.Start), res.Start.Add(iv.Start+res.Config.Interval)
		ivs = append(ivs, latency.LogInterval{Start: start, End: end, Tag: "latency", R: iv.Latency},
			latency.LogInterval{Start: start, End: end, Tag: "service", R: iv.ServiceTime},
			latency.LogInterval{Start: start, End: end, Tag: "lag", R: iv.ScheduleLag})
	}
	var b bytes.Buffer
	comment := fmt.Sprintf("[meshbench %s: per %s of the measured window, by answer time; tags latency (from intended send), service (from actual send), lag (schedule); values in ns]",
		Version, res.Config.Interval)
	if err := latency.WriteIntervalLog(&b, res.Start, comment, ivs); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
