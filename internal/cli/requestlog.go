package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/results"
)

// requestFlags are load's per-request flags: an id on every request and
// a log of every request (what hop timing joins proxies' records with).
type requestFlags struct {
	ids string
	log string
}

func (f *requestFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.ids, "request-ids", "", "give every request an X-Request-Id header (gRPC: metadata) PREFIX-NUMBER, NUMBER its place in the schedule as 16 hex digits; proxies log it")
	fl.StringVar(&f.log, "request-log", "", "write every request sent (id, window, service time, latency, status) as JSON lines to `FILE` (meshbench's engine)")
}

// check validates the flags into cfg.
func (f *requestFlags) check(generator string, cfg *loadgen.Config) []error {
	var errs []error
	if f.ids != "" {
		if err := loadgen.CheckRequestIDPrefix(f.ids); err != nil {
			errs = append(errs, fmt.Errorf("--request-ids: %w", err))
		}
		cfg.RequestIDs = f.ids
	}
	if f.log != "" {
		if generator != extgen.Meshbench {
			errs = append(errs, fmt.Errorf("--request-log: only with meshbench's own engine (--generator meshbench)"))
		} else if err := results.CheckOutputFile(f.log); err != nil {
			errs = append(errs, fmt.Errorf("--request-log %w", err))
		}
	}
	if (f.ids != "" || f.log != "") && generator != extgen.Meshbench && f.log == "" {
		errs = append(errs, fmt.Errorf("--request-ids: only with meshbench's own engine (--generator meshbench)"))
	}
	return errs
}

// open starts the request log into cfg.OnRequest; finish flushes and
// closes it. Without --request-log both do nothing.
func (f *requestFlags) open(cfg *loadgen.Config) (finish func() error, err error) {
	if f.log == "" {
		return func() error { return nil }, nil
	}
	file, err := os.Create(f.log)
	if err != nil {
		return nil, fmt.Errorf("--request-log: %w", err)
	}
	l := hops.NewRequestLog(file)
	prefix := cfg.RequestIDs
	cfg.OnRequest = func(r loadgen.RequestRecord) {
		q := hops.Request{Measured: r.Measured, ServiceNs: int64(r.End - r.Sent), LatencyNs: int64(r.End - min(r.Intended, r.Sent)), Code: r.Code}
		if prefix != "" {
			q.ID = loadgen.RequestID(prefix, r.N)
		} else {
			q.ID = strconv.FormatUint(r.N, 10)
		}
		if r.Err != nil {
			q.Error = r.Err.Error()
		}
		l.Add(q)
	}
	return func() error {
		err := l.Flush()
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing --request-log %s: %w", f.log, err)
		}
		return nil
	}, nil
}
