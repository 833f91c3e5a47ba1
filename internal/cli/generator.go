package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/load/loadgen"
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
	out, err := results.FromRun(res, Version)
	if err != nil {
		return nil, false, err
	}
	if f.hlog != "" {
		if err := results.WriteHlog(f.hlog, out); err != nil {
			return nil, false, err
		}
	}
	return out, res.Interrupted, nil
}
