package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/extgen"
	"github.com/meshbench/meshbench/internal/loadgen"
	"github.com/meshbench/meshbench/internal/results"
)

// checkGenerator reports why --generator cannot run cfg (nil for
// meshbench's engine, which buildLoadConfig has checked).
func checkGenerator(f *loadFlags, cfg loadgen.Config) error {
	if !slices.Contains(extgen.Names, f.generator) {
		return fmt.Errorf("--generator %q: allowed: %s", f.generator, strings.Join(extgen.Names, ", "))
	}
	if f.generator == extgen.Meshbench {
		if f.generatorPath != "" {
			return errors.New("--generator-path: only with --generator oha or wrk2")
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
	return extgen.Config{Generator: f.generator, Path: f.generatorPath, Load: cfg, TLSFiles: f.tls,
		Threads: f.cpus, Version: Version, Now: cfg.Now}
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
	return out, res.Interrupted, nil
}
