package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/analysis/threshold"
	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
)

type loadFlags struct {
	rate string
	max  bool
	bulk bool
	// perConn is --requests-per-connection; arrivals and seed space an
	// open loop's requests.
	perConn     int
	arrivals    string
	sendTick    time.Duration
	seed        uint64
	duration    time.Duration
	warmup      time.Duration
	timeout     time.Duration
	connections int
	maxQueue    int
	method      string
	headers     []string
	body        string
	bodyFile    string
	host        string
	tcpSize     int
	http2       bool
	keepAlive   bool
	tls         loadgen.TLSFiles
	format      string
	output      string
	quiet       bool
	cpus        int
	cpuProfile  string
	// hlog is --hlog: the interval log to write (per second).
	hlog string
	// interval is --interval: the length of the latency-over-time
	// intervals (LoadResult.Intervals).
	interval time.Duration
	// progressFile, when set, is rewritten every second with the running
	// figures (results.LoadProgress), for the lab's live view.
	progressFile string
	// progressLog: print the running figures to stderr every second as
	// results.ProgressLine (a cluster's load workers; the platform
	// follows their logs for the live view).
	progressLog bool
	// failOn is --fail-on, parsed into conditions by buildLoadConfig.
	failOn     string
	conditions []threshold.Condition
	// workers and workerIndex split the load between several generators
	// (the pods of a Kubernetes Job): this one sends its share.
	workers     int
	workerIndex int
	// workerIndexEnv is $JOB_COMPLETION_INDEX, --worker-index's default
	// when the flag is not given.
	workerIndexEnv string
	// generator is the load generator (extgen.Names), generatorPath its
	// binary for an external one.
	generator, generatorPath string
	// search holds the capacity-search flags (--slo …, loadsearch.go).
	search searchFlags
	// requests are --request-ids and --request-log (requestlog.go).
	requests requestFlags
}

// maxWorkers bounds --workers.
const maxWorkers = 10000

func newLoadCmd(env *Env) *cobra.Command {
	f := &loadFlags{}
	cmd := &cobra.Command{
		Use:   "load TARGET...",
		Short: "Send open-loop constant-rate load (or closed-loop --max) and report latency, rate and errors",
		Long: `Send load to one or more targets and report what the client saw.

Open loop by default: requests are sent at a constant --rate whatever the
answers do, and each latency is measured from the request's intended send
time, so a stalled server shows in the percentiles (no coordinated omission).
When every connection is busy a request waits in a bounded queue
(--max-queue); past it, it is dropped and counted. --max switches to a closed
loop (each connection sends its next request when the last one returns),
which measures saturation throughput; its latencies are queueing-dominated.

Targets: http://, https:// (add --http2 for h2), h2c://, grpc://, grpcs://
(unary calls to grpc.testing.TestService, as served by 'meshbench serve grpc'),
tcp:// (fixed-size request, echoed back). Several targets are spread over the
connections round-robin.

Several generators (the pods of a Kubernetes Job) share one load with
--workers W and --worker-index I (default: $JOB_COMPLETION_INDEX, which an
Indexed Job sets, else 0): each sends its share of --rate and of
--connections, the remainder spread one unit each over the first workers
(100/s over 3 workers: 33.333334, 33.333333, 33.333333 per second), so the
W results merged with 'meshbench merge' are the whole load.`,
		Example: `  meshbench load --rate 1000 --duration 10s http://127.0.0.1:8080/
  meshbench load --rate 200 --connections 4 -o result.json h2c://127.0.0.1:8080/
  meshbench load --max --connections 16 --duration 5s http://127.0.0.1:8080/
  meshbench load --rate 1000 --workers 4 --worker-index 2 --output-format json http://static:8080/`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.workerIndexEnv = env.Getenv(loadjob.CompletionIndexEnv)
			return runLoad(cmd.Context(), env, cmd, f, args)
		},
	}
	bindLoadFlags(cmd.Flags(), f)
	return cmd
}

// bindLoadFlags declares the load flags on fl, bound to f.
func bindLoadFlags(fl *pflag.FlagSet, f *loadFlags) {
	fl.StringVarP(&f.rate, "rate", "r", "50", `requests per second, exact; fractions allowed ("33.3") or N/UNIT ("60/m")`)
	fl.BoolVar(&f.max, "max", false, "closed loop: maximum throughput, each connection sends when its last answer arrives")
	fl.BoolVar(&f.bulk, "bulk", false, "bulk throughput (netperf's TCP_STREAM, server to client): each connection reads one endless answer, e.g. serve static's "+loadgen.StreamPath+"; reports bytes per second of the window")
	fl.IntVar(&f.perConn, "requests-per-connection", 0, "requests each connection carries before a new one is opened (http/1.1, tcp): 1 is a connection per request (netperf's TCP_CRR); 0 keeps every connection")
	fl.StringVar(&f.arrivals, "arrivals", string(loadgen.ArrivalsConstant), "open-loop spacing: constant (every 1/rate) or poisson (exponential gaps, the same mean rate)")
	fl.DurationVar(&f.sendTick, "send-tick", 0, "open loop: wake at most once per `DURATION` (100µs to 10ms) and send every request due by then together, as oha does with 1ms; latency still counts from each intended send time. 0: each request at its own time")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of --arrivals poisson (a worker of --workers adds its index)")
	fl.DurationVarP(&f.duration, "duration", "d", 10*time.Second, "measured duration (after the warm-up)")
	fl.DurationVar(&f.warmup, "warmup", time.Second, "load sent before the measured window, not counted (0 to skip)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "per-request timeout, from the actual send")
	fl.IntVarP(&f.connections, "connections", "c", loadgen.DefaultConnections, "keep-alive connections the rate is spread over (at least one per target)")
	fl.IntVar(&f.maxQueue, "max-queue", -1, "requests waiting for a free connection before new ones are dropped (default: one second of requests, at least 1000)")
	fl.StringVarP(&f.method, "method", "X", "GET", "HTTP method")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, `request header "Name: value" (repeatable; gRPC metadata for grpc targets)`)
	fl.StringVar(&f.body, "body", "", "request body (HTTP), payload (gRPC) or request bytes (TCP)")
	fl.StringVar(&f.bodyFile, "body-file", "", "read the request body from this file")
	fl.StringVar(&f.host, "host", "", "Host header override (HTTP)")
	fl.IntVar(&f.tcpSize, "tcp-size", 615, "tcp:// request size in bytes when no --body is given (echoed back)")
	fl.BoolVar(&f.http2, "http2", false, "use HTTP/2 on http:// (h2c) and https:// (h2) targets")
	fl.BoolVar(&f.keepAlive, "keepalive", true, "reuse connections; false opens a new connection per request (HTTP/1.1)")
	fl.StringVar(&f.tls.CAFile, "cacert", "", "PEM CA bundle that verifies the server")
	fl.StringVar(&f.tls.CertFile, "cert", "", "PEM client certificate (mTLS)")
	fl.StringVar(&f.tls.KeyFile, "key", "", "PEM private key of --cert")
	fl.StringVar(&f.tls.ServerName, "server-name", "", "TLS server name to send and verify (default: the target's host)")
	fl.BoolVar(&f.tls.Insecure, "insecure", false, "do not verify the server's certificate")
	fl.StringVar(&f.format, "output-format", "", "text, json, hdr or vegeta-json (vegeta report -type=json's document) (default: text; from -o's extension .json/.hdr when given)")
	fl.StringVarP(&f.output, "output", "o", "", "write the report in --output-format to this file (the text report still goes to stdout)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no live progress line")
	fl.StringVar(&f.progressFile, "progress-file", "", "rewrite `FILE` every second with the running figures as JSON (meshbench's engine; the lab's live view reads it)")
	_ = fl.MarkHidden("progress-file")
	fl.BoolVar(&f.progressLog, "progress-log", false, "print the running figures to stderr every second as a line \""+strings.TrimSpace(results.ProgressLinePrefix)+" JSON\" (meshbench's engine; a cluster's live view follows the workers' logs)")
	_ = fl.MarkHidden("progress-log")
	fl.StringVar(&f.hlog, "hlog", "", "also write latency, service time and schedule lag per --interval of the window as HdrHistogram's interval log (.hlog) to `FILE`")
	fl.DurationVar(&f.interval, "interval", time.Second, "latency over time: the result's histograms and failed answers per interval of this length (meshbench's engine), 10ms to 1h")
	f.requests.add(fl)
	fl.StringVar(&f.failOn, "fail-on", "", `conditions that fail the run with exit 99 after its report, comma-separated, e.g. "p99>5ms,errors>0.1%"; metrics: `+strings.Join(threshold.Metrics, ", "))
	fl.IntVar(&f.cpus, "cpus", 1, "OS threads running the engine (GOMAXPROCS; with --generator, the tool's threads); one core keeps up with tens of thousands of requests per second, and fewer threads means fewer cross-thread wake-ups per request")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to this file")
	_ = fl.MarkHidden("cpuprofile")
	fl.IntVar(&f.workers, "workers", 1, "load generators sharing this load; this one sends its share of --rate and --connections")
	fl.IntVar(&f.workerIndex, "worker-index", 0, "this generator's index among --workers, 0 to W-1 (default: $"+loadjob.CompletionIndexEnv+" when set, else 0)")
	fl.StringVar(&f.generator, "generator", extgen.Meshbench, "load generator: meshbench (this engine), oha, wrk2, vegeta or fortio (run as a subprocess, HTTP/1.1 only; same result format, with how exact each figure is)")
	fl.StringVar(&f.generatorPath, "generator-path", "", "`PATH` of the --generator oha|wrk2|vegeta|fortio binary (default: vegeta and fortio from make generators, else each on $PATH; wrk2 then wrk)")
	bindSearchFlags(fl, &f.search)
}

// buildLoadConfig turns flags into an engine configuration, reporting every
// problem at once as a usage error.
func buildLoadConfig(cmd *cobra.Command, f *loadFlags, args []string) (loadgen.Config, string, error) {
	var errs []error
	cfg := loadgen.Config{
		Duration: f.duration, Warmup: f.warmup, Timeout: f.timeout,
		Connections: f.connections, KeepAlive: f.keepAlive,
	}
	if len(args) == 0 {
		errs = append(errs, fmt.Errorf("no target given: pass at least one URL (%s)", loadgen.SupportedSchemes))
	}
	for _, a := range args {
		t, err := loadgen.ParseTarget(a, f.http2)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg.Targets = append(cfg.Targets, t)
	}
	switch {
	case f.max && f.bulk:
		errs = append(errs, errors.New("--max and --bulk exclude each other: --bulk reads one endless answer per connection"))
	case f.bulk:
		cfg.Load = loadgen.Bulk
	case f.max:
		cfg.Load = loadgen.ClosedLoop
	default:
		r, err := loadgen.ParseRate(f.rate)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%w", err))
		}
		cfg.Load = loadgen.OpenLoop(r)
	}
	if (f.max || f.bulk) && cmd.Flags().Changed("rate") {
		errs = append(errs, errors.New("--rate, --max and --bulk exclude each other: --max and --bulk send as fast as answers allow"))
	}
	arrivals, err := loadgen.ParseArrivals(f.arrivals)
	if err != nil {
		errs = append(errs, fmt.Errorf("--%w", err))
	}
	cfg.Arrivals, cfg.Seed = arrivals, f.seed
	if err := loadgen.ValidateSendTick(f.sendTick); err != nil {
		errs = append(errs, fmt.Errorf("--%w", err))
	} else if f.sendTick > 0 && (f.max || f.bulk) {
		errs = append(errs, errors.New("--send-tick applies to an open loop (--rate), not to --max or --bulk"))
	}
	cfg.SendTick = f.sendTick
	switch {
	case f.perConn < 0:
		errs = append(errs, fmt.Errorf("--requests-per-connection %d: allowed: 0 (keep every connection) or more", f.perConn))
	case f.perConn > 0 && !f.keepAlive && f.perConn != 1:
		errs = append(errs, fmt.Errorf("--requests-per-connection %d with --keepalive=false: --keepalive=false is one request per connection", f.perConn))
	case !f.keepAlive:
		cfg.RequestsPerConnection = 1
	default:
		cfg.RequestsPerConnection = f.perConn
	}
	if cfg.RequestsPerConnection == 1 {
		cfg.KeepAlive = false // the external generators' spelling of it
	}
	if f.bulk && f.perConn > 0 {
		errs = append(errs, fmt.Errorf("--requests-per-connection with --bulk: a bulk connection carries one endless answer"))
	}
	if !cmd.Flags().Changed("connections") && len(cfg.Targets) > cfg.Connections {
		cfg.Connections = len(cfg.Targets)
	}
	if err := splitForWorker(cmd, f, &cfg); err != nil {
		errs = append(errs, err)
	}
	switch {
	case f.maxQueue >= 0:
		cfg.MaxQueue = f.maxQueue
	case f.maxQueue == -1:
		cfg.MaxQueue = max(1000, int(math.Ceil(cfg.Load.PerSecond())))
	default:
		errs = append(errs, fmt.Errorf("--max-queue %d: allowed: 0 or more", f.maxQueue))
	}
	cfg.Request.Method = strings.ToUpper(f.method)
	if f.method == "" || strings.ContainsAny(f.method, " \t\r\n") {
		errs = append(errs, fmt.Errorf("--method %q: allowed: an HTTP method token such as GET, POST, HEAD", f.method))
	}
	cfg.Request.Host = f.host
	if len(f.headers) > 0 {
		cfg.Request.Headers = http.Header{}
	}
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			errs = append(errs, fmt.Errorf(`--header %q: allowed: "Name: value"`, h))
			continue
		}
		cfg.Request.Headers.Add(name, strings.TrimSpace(value))
	}
	switch {
	case f.body != "" && f.bodyFile != "":
		errs = append(errs, errors.New("--body and --body-file exclude each other"))
	case f.bodyFile != "":
		b, err := os.ReadFile(f.bodyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--body-file %s: %v", f.bodyFile, err))
		}
		cfg.Request.Body = b
	case f.body != "":
		cfg.Request.Body = []byte(f.body)
	}
	if len(cfg.Targets) > 0 && cfg.Targets[0].Protocol == loadgen.TCP && len(cfg.Request.Body) == 0 {
		if f.tcpSize < 1 || f.tcpSize > 16<<20 {
			errs = append(errs, fmt.Errorf("--tcp-size %d: allowed: 1 to %d bytes", f.tcpSize, 16<<20))
		} else {
			cfg.Request.Body = bytes.Repeat([]byte("m"), f.tcpSize)
		}
	}
	tlsCfg, err := f.tls.Config()
	if err != nil {
		errs = append(errs, err)
	}
	cfg.TLS = tlsCfg
	format := outputFormat(f.format, f.output)
	if f.cpus < 1 || f.cpus > 1024 {
		errs = append(errs, fmt.Errorf("--cpus %d: allowed: 1 to 1024", f.cpus))
	}
	if !slices.Contains(report.LoadFormats, format) {
		errs = append(errs, fmt.Errorf("--output-format %q: allowed: %s", format, strings.Join(report.LoadFormats, ", ")))
	}
	if len(errs) == 0 {
		if err := cfg.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkGenerator(f, cfg); err != nil {
		errs = append(errs, err)
	}
	if f.hlog != "" {
		if f.generator != extgen.Meshbench {
			errs = append(errs, fmt.Errorf("--hlog: only with meshbench's own engine (--generator meshbench)"))
		} else if err := results.CheckOutputFile(f.hlog); err != nil {
			errs = append(errs, fmt.Errorf("--hlog %w", err))
		}
	}
	// Latency over time, per interval of the window (a second unless
	// asked), in every result of meshbench's engine
	// (LoadResult.Intervals): three more histogram records per answer.
	cfg.Interval = f.interval
	if f.interval < 10*time.Millisecond || f.interval > time.Hour {
		errs = append(errs, fmt.Errorf("--interval %s: allowed: 10ms to 1h", f.interval))
		cfg.Interval = time.Second
	}
	errs = append(errs, f.requests.check(f.generator, &cfg)...)
	if f.failOn != "" {
		conds, err := threshold.Parse(f.failOn)
		if err != nil {
			errs = append(errs, fmt.Errorf("--fail-on: %w", err))
		}
		f.conditions = conds
	}
	if len(errs) == 0 && f.generator == extgen.Meshbench {
		if err := loadgen.EnsureFileLimit(cfg.Connections); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return cfg, format, &UsageError{Err: errors.Join(errs...)}
	}
	return cfg, format, nil
}

// splitForWorker resolves --workers and --worker-index and, for W > 1,
// leaves cfg with this worker's share of the rate and the connections (at
// least one connection per target). One worker keeps the exact rate.
func splitForWorker(cmd *cobra.Command, f *loadFlags, cfg *loadgen.Config) error {
	var errs []error
	w := f.workers
	if w < 1 || w > maxWorkers {
		return fmt.Errorf("--workers %d: allowed: 1 to %d", w, maxWorkers)
	}
	i := f.workerIndex
	if !cmd.Flags().Changed("worker-index") && f.workerIndexEnv != "" {
		n, err := strconv.Atoi(strings.TrimSpace(f.workerIndexEnv))
		if err != nil || n < 0 || n >= w {
			return fmt.Errorf("$%s %q (the default of --worker-index): allowed: 0 to %d with --workers %d", loadjob.CompletionIndexEnv, f.workerIndexEnv, w-1, w)
		}
		i = n
	}
	if i < 0 || i >= w {
		return fmt.Errorf("--worker-index %d: allowed: 0 to %d with --workers %d", i, w-1, w)
	}
	f.workerIndex = i
	if w == 1 {
		return nil
	}
	// Each worker's Poisson arrivals are its own: W processes of one seed
	// would burst together.
	cfg.Seed += uint64(i)
	if !cfg.Load.Closed() && cfg.Load.Rate().Freq > 0 {
		r, err := loadgen.WorkerRate(cfg.Load.Rate(), w, i)
		if err != nil {
			errs = append(errs, fmt.Errorf("--rate %s over --workers %d: %v; use fewer workers", f.rate, w, err))
		} else {
			cfg.Load = loadgen.OpenLoop(r)
		}
	}
	cfg.Connections = max(loadgen.WorkerConnections(cfg.Connections, w, i), len(cfg.Targets))
	return errors.Join(errs...)
}

func runLoad(ctx context.Context, env *Env, cmd *cobra.Command, f *loadFlags, args []string) error {
	if f.search.slo != "" || cmd.Flags().Changed("slo") {
		return runLoadSearch(ctx, env, cmd, f, args)
	}
	if ch := searchChanged(cmd); len(ch) > 0 {
		return usagef("%s: only with --slo (a capacity search)", strings.Join(ch, ", "))
	}
	cfg, format, err := buildLoadConfig(cmd, f, args)
	if err != nil {
		return err
	}
	outFile, err := openOutputAndPreflight(ctx, f.output, cfg)
	if err != nil {
		return err
	}
	if outFile != nil {
		defer outFile.Close()
	}
	cfg.Now = env.Now
	if f.cpus > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(f.cpus))
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return usagef("--cpuprofile %s: %v", f.cpuProfile, err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err == nil {
			defer pprof.StopCPUProfile()
		}
	}
	var prog *progressLine
	if !f.quiet {
		// A terminal gets one redrawn line; a pipe, a CI log or TERM=dumb
		// a plain line every few seconds, without cursor codes.
		plain := !env.StderrIsTTY || env.Getenv("TERM") == "dumb"
		prog = &progressLine{w: env.Stderr, total: cfg.Duration, plain: plain}
		cfg.Progress = prog.show
	}
	if f.progressFile != "" && f.generator == extgen.Meshbench {
		show := cfg.Progress
		path := f.progressFile
		cfg.Progress = func(pr loadgen.Progress) {
			if show != nil {
				show(pr)
			}
			writeProgressFile(path, pr)
		}
	}
	if f.progressLog && f.generator == extgen.Meshbench {
		show := cfg.Progress
		w := env.Stderr
		cfg.Progress = func(pr loadgen.Progress) {
			if show != nil {
				show(pr)
			}
			fmt.Fprintf(w, "%s\n", results.ProgressLine(loadProgressOf(pr)))
		}
	}
	finishRequests, err := f.requests.open(&cfg)
	if err != nil {
		return err
	}
	out, interrupted, err := runGenerator(ctx, f, cfg, prog)
	if ferr := finishRequests(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if f.workers > 1 { // one share of a split load: say which
		out.Worker = &results.WorkerShare{Index: f.workerIndex, Count: f.workers}
	}
	if outFile != nil {
		if err := report.WriteLoad(outFile, out, format); err != nil {
			return fmt.Errorf("writing %s: %w", f.output, err)
		}
		if err := outFile.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", f.output, err)
		}
		if err := report.LoadText(env.Stdout, out); err != nil {
			return err
		}
	} else if err := report.WriteLoad(env.Stdout, out, format); err != nil {
		return err
	}
	if interrupted {
		return errInterrupted
	}
	return checkThresholds(out, f.conditions)
}

// checkThresholds returns a ThresholdError naming every --fail-on
// condition the result meets.
func checkThresholds(r *results.LoadResult, conds []threshold.Condition) error {
	if len(conds) == 0 {
		return nil
	}
	crossed, err := threshold.Crossed(r, conds)
	if err != nil {
		return err
	}
	if len(crossed) > 0 {
		return &ThresholdError{Crossed: crossed}
	}
	return nil
}

// progressLine redraws one status line on a terminal; in plain mode it
// prints a whole line every plainEvery instead (no cursor codes).
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	total time.Duration
	plain bool
	drawn bool
	// next is when plain mode prints again (elapsed time; warm-up is
	// negative and printed once).
	next    time.Duration
	started bool
}

// plainEvery is how often a plain progress line is printed: often enough
// that a CI log shows a run is alive, rare enough not to flood it.
const plainEvery = 5 * time.Second

func (p *progressLine) show(pr loadgen.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plain {
		if p.started && pr.Elapsed < p.next {
			return
		}
		p.started = true
		p.next = max(pr.Elapsed, 0).Truncate(plainEvery) + plainEvery
		if pr.Elapsed < 0 {
			p.next = 0 // the first line of the measured window follows
		}
	}
	phase := fmt.Sprintf("%5.1fs/%s", max(pr.Elapsed, 0).Seconds(), report.Dur(p.total))
	if pr.Elapsed < 0 {
		phase = fmt.Sprintf("warm-up %.1fs", (-pr.Elapsed).Seconds())
	}
	rate := 0.0
	if pr.Elapsed > 0 {
		rate = float64(pr.Sent) / pr.Elapsed.Seconds()
	}
	line := fmt.Sprintf("[%s] sent %d  %.1f/s  p50 %s  p99 %s  errors %d  dropped %d",
		phase, pr.Sent, rate, report.DurNs(pr.P50Ns), report.DurNs(pr.P99Ns), pr.Errors, pr.Dropped)
	if p.plain {
		fmt.Fprintln(p.w, "progress "+line)
		return
	}
	fmt.Fprint(p.w, "\r\033[K"+line)
	p.drawn = true
}

func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// outputFormat is the format a load result is written in: the flag's when
// given, else the one -o's extension names (.json, .hdr), else text.
func outputFormat(flagValue, output string) string {
	if flagValue != "" {
		return flagValue
	}
	switch strings.ToLower(filepath.Ext(output)) {
	case ".json":
		return "json"
	case ".hdr":
		return "hdr"
	}
	return "text"
}

// openOutputAndPreflight creates the output file first, so a bad path is
// reported before any load, then checks every target once: an unreachable
// target removes the file again. The caller closes the file.
func openOutputAndPreflight(ctx context.Context, output string, cfg loadgen.Config) (*os.File, error) {
	var outFile *os.File
	if output != "" && output != "-" {
		var err error
		outFile, err = os.Create(output)
		if err != nil {
			return nil, usagef("--output %s: %v", output, err)
		}
	}
	if err := loadgen.Preflight(ctx, cfg.Targets, cfg.TLS, min(cfg.Timeout, 5*time.Second)); err != nil {
		if outFile != nil {
			outFile.Close()
			os.Remove(output)
		}
		if ctx.Err() != nil {
			return nil, errInterrupted
		}
		return nil, err
	}
	return outFile, nil
}

// loadProgressOf is the engine's running figures as results.LoadProgress.
func loadProgressOf(pr loadgen.Progress) results.LoadProgress {
	rate := 0.0
	if pr.Elapsed > 0 {
		rate = float64(pr.Sent) / pr.Elapsed.Seconds()
	}
	return results.LoadProgress{ElapsedNs: int64(pr.Elapsed), Sent: pr.Sent, Completed: pr.Completed, Errors: pr.Errors,
		Dropped: pr.Dropped, P50Ns: pr.P50Ns, P99Ns: pr.P99Ns, RatePerSec: rate}
}

// writeProgressFile rewrites path (temporary file + rename) with pr as
// results.LoadProgress; a failure is ignored (the live view is a view).
func writeProgressFile(path string, pr loadgen.Progress) {
	b, err := json.Marshal(loadProgressOf(pr))
	if err == nil {
		_ = results.WriteFileAtomic(path, b, 0o644)
	}
}
