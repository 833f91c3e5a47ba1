package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/workload"
)

type serveFlags struct {
	listen      string
	bodySize    int
	delay       time.Duration
	delayDist   string
	stallEvery  time.Duration
	stallFor    time.Duration
	errorRatio  float64
	errorStatus int
	seed        int64
	grace       time.Duration
	readyFile   string
	smileyURL   string
	colorAddr   string
	concurrency int
	serviceTime time.Duration
	control     string
}

func newServeCmd(env *Env) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve static|grpc|tcp|face",
		Short: "Run a built-in workload server (static HTTP page, gRPC test service, TCP echo), optionally with faults",
		Long: `Run one built-in workload server until interrupted (SIGINT/SIGTERM), then
stop gracefully: stop accepting, finish in-flight requests within --grace,
exit 0.

Workloads:
  static  HTTP/1.1 and h2c (HTTP/2 cleartext, prior knowledge) on one port;
          every method and path answers 200 with a fixed body: nginx's
          615-byte welcome page, or --body-size filler bytes. GET /healthz
          answers "ok" and is never faulted.
  grpc    grpc.testing.TestService (UnaryCall echoes its payload, or answers
          response_size bytes; EmptyCall) and the gRPC health service.
  tcp     echo: every read (up to 64 KiB) is written back.
  face    a Faces-like front (HTTP/1.1 and h2c): for every request it calls
          --smiley-url over HTTP (a static workload) and --color-addr over
          gRPC (a grpc workload), then answers 200 with a small JSON body;
          502 when a backend fails.

Faults apply to every answer except health probes: a fixed --delay plus a
random --delay-dist; periodic whole-server stalls (--stall-for at the start
of every --stall-every period, counted from start); and injected errors on
--error-ratio of requests (static: --error-status; grpc: UNAVAILABLE; tcp:
the connection is reset). --seed makes the random choices repeatable.

--concurrency K --service-time S bound the server: at most K requests are
served at once, each for exactly S, the others wait in arrival order. Its
capacity is then exactly K/S requests per second (4 and 2ms: 2000/s), a
known answer for 'meshbench load --slo' and plan searches. Faults apply
after the service time; health probes are exempt.

Delays are slept to the µs the machine allows: the wait ends at its planned
end, the timer asked to wake early by its recent smallest lateness and the
rest spun. The server measures every wait it makes (from the request's
arrival to the end of its wait) and prints them on exit beside what was
asked (stderr: "delays: …"). --control SOCKET serves a unix socket to add a
delay to every answer while it runs (a slow replica) and to read those
measured waits ('meshbench serve control').

Once listening it prints one line to stdout, "READY KIND HOST:PORT", with the
bound address (so --listen 127.0.0.1:0 works), and writes HOST:PORT to
--ready-file if given.`,
		Example: `  meshbench serve static
  meshbench serve static --listen 127.0.0.1:0 --ready-file /tmp/addr
  meshbench serve grpc --listen 127.0.0.1:9090 --delay-dist exp:2ms --error-ratio 0.01
  meshbench serve tcp --stall-every 10s --stall-for 200ms
  meshbench serve static --concurrency 4 --service-time 2ms    # capacity 2000/s
  meshbench serve static --delay 3ms --control /tmp/app.sock
  meshbench serve control /tmp/app.sock --delay 200ms               # every answer 200ms later`,
		ValidArgs: kindNames(),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("serve takes one workload kind (%s), got %d arguments", strings.Join(kindNames(), ", "), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := buildServeConfig(cmd, f, args[0])
			if err != nil {
				return err
			}
			return runServe(cmd.Context(), env, cfg, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", workload.DefaultListen, "host:port to listen on; port 0 picks a free port (see the READY line)")
	fl.IntVar(&f.bodySize, "body-size", workload.DefaultBodySize, fmt.Sprintf("static response body in bytes, 1 to %d; 615 is nginx's welcome page", workload.MaxBodySize))
	fl.DurationVar(&f.delay, "delay", 0, "fixed delay before every answer, 0s to 1h")
	fl.StringVar(&f.delayDist, "delay-dist", "", "random delay added to --delay: uniform:MIN,MAX, exp:MEAN or normal:MEAN,STDDEV (e.g. exp:2ms)")
	fl.DurationVar(&f.stallEvery, "stall-every", 0, "period of whole-server stalls counted from start, up to 1h (0 = no stalls)")
	fl.DurationVar(&f.stallFor, "stall-for", 0, "length of each stall at the start of every --stall-every period (shorter than it)")
	fl.Float64Var(&f.errorRatio, "error-ratio", 0, "fraction of requests answered with an injected error, 0 to 1")
	fl.IntVar(&f.errorStatus, "error-status", workload.DefaultErrorStatus, "HTTP status of injected errors, 400 to 599 (static only)")
	fl.Int64Var(&f.seed, "seed", 0, "seed for random delays and errors (0 = a random seed)")
	fl.DurationVar(&f.grace, "grace", 5*time.Second, "on interrupt, how long in-flight requests may take before connections are closed")
	fl.StringVar(&f.smileyURL, "smiley-url", "", "face: the smiley backend, http://HOST:PORT/ (a static workload)")
	fl.StringVar(&f.colorAddr, "color-addr", "", "face: the color backend, HOST:PORT (a grpc workload)")
	fl.IntVar(&f.concurrency, "concurrency", 0, fmt.Sprintf("serve at most this many requests at once, each for --service-time, the rest queued in arrival order (0 = no bound, up to %d)", workload.MaxConcurrency))
	fl.DurationVar(&f.serviceTime, "service-time", 0, "each request's time in service with --concurrency (capacity = concurrency / service time)")
	fl.StringVar(&f.readyFile, "ready-file", "", "once listening, write HOST:PORT to this file (atomically, by rename); removed on exit")
	fl.StringVar(&f.control, "control", "", "serve a unix socket at `PATH` (or on a loopback address, 127.0.0.1:PORT: in a pod, reached by a port-forward) to add a delay to every answer while running and read the measured waits (meshbench serve control)")
	cmd.AddCommand(newServeControlCmd(env))
	return cmd
}

// newServeControlCmd is `meshbench serve control SOCKET`: the control
// socket's client.
func newServeControlCmd(env *Env) *cobra.Command {
	var delay time.Duration
	var reset bool
	cmd := &cobra.Command{
		Use:   "control SOCKET",
		Short: "Change a running server's delay, or read the waits it measured, through its --control socket",
		Long: `Talk to a 'meshbench serve --control SOCKET' server while it runs.

With --delay D every answer from then on waits D more than its faults ask
(0s: no more): a slow replica, as meshbench's slow-replica fault makes
one. It prints the extra delay it replaced.

Without --delay it prints the waits the server measured since it started
(or since the last --reset) as JSON: how many answers waited, the measured
waits (from each request's arrival to the end of its wait) and how far
each overshot the wait planned, in ns.`,
		Example: `  meshbench serve control /tmp/app.sock --delay 200ms
  meshbench serve control /tmp/app.sock --delay 0s
  meshbench serve control /tmp/app.sock --reset`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("serve control takes one argument, the control socket's path, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c := workload.Control{Path: args[0]}
			ctx := cmd.Context()
			if cmd.Flags().Changed("delay") {
				if delay < 0 || delay > workload.MaxDelay {
					return usagef("--delay %s: allowed: 0s to %s", delay, workload.MaxDelay)
				}
				prev, err := c.SetDelay(ctx, delay)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "extra delay %s (was %s)\n", delay, prev)
				return nil
			}
			st, err := c.Stats(ctx, reset)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(st)
		},
	}
	cmd.Flags().DurationVar(&delay, "delay", 0, "every answer from now on waits this much more (0s: no more), up to 1h")
	cmd.Flags().BoolVar(&reset, "reset", false, "after printing the measured waits, start them again")
	return cmd
}

// delaysLine is what serve prints on exit about its waits, "" when none
// waited.
func delaysLine(cfg workload.Config, d workload.DelayStats) string {
	if d.Answers == 0 {
		return ""
	}
	ms := func(ns int64) string { return time.Duration(ns).String() }
	asked := cfg.Faults.Delay.String()
	if cfg.Faults.RandomDelay != nil {
		asked += " + " + cfg.Faults.RandomDelay.String()
	}
	if cfg.Concurrency > 0 {
		asked = fmt.Sprintf("service time %s in a queue of %d, then %s", cfg.ServiceTime, cfg.Concurrency, asked)
	}
	return fmt.Sprintf("delays: asked %s; measured over %d answers min %s, p50 %s, p99 %s, max %s; beyond the planned wait p50 %s, p99 %s",
		asked, d.Answers, ms(d.Measured.MinNs), ms(d.Measured.P50Ns), ms(d.Measured.P99Ns), ms(d.Measured.MaxNs), ms(d.Overshoot.P50Ns), ms(d.Overshoot.P99Ns))
}

func kindNames() []string {
	names := make([]string, len(workload.Kinds))
	for i, k := range workload.Kinds {
		names[i] = string(k)
	}
	return names
}

// buildServeConfig turns flags into a workload configuration, reporting every
// problem at once as a usage error.
func buildServeConfig(cmd *cobra.Command, f *serveFlags, kind string) (workload.Config, error) {
	var errs []error
	cfg := workload.Config{
		Kind:        workload.Kind(kind),
		Listen:      f.listen,
		SmileyURL:   f.smileyURL,
		ColorAddr:   f.colorAddr,
		BodySize:    f.bodySize,
		Concurrency: f.concurrency,
		ServiceTime: f.serviceTime,
		Control:     f.control,
		Faults: workload.Faults{
			Delay:       f.delay,
			StallEvery:  f.stallEvery,
			StallFor:    f.stallFor,
			ErrorRatio:  f.errorRatio,
			ErrorStatus: f.errorStatus,
			Seed:        f.seed,
		},
	}
	changed := cmd.Flags().Changed
	if err := checkListen(f.listen); err != nil {
		errs = append(errs, err)
	}
	// The library reads 0 as "default"; on the command line 0 is an error.
	if f.bodySize < 1 || f.bodySize > workload.MaxBodySize {
		errs = append(errs, fmt.Errorf("--body-size %d: allowed: 1 to %d bytes", f.bodySize, workload.MaxBodySize))
		cfg.BodySize = workload.DefaultBodySize
	} else if changed("body-size") && isKind(kind) && cfg.Kind != workload.KindStatic {
		errs = append(errs, fmt.Errorf("--body-size applies to the static workload only (%s answers what the client asks for)", kind))
	}
	if f.errorStatus < 400 || f.errorStatus > 599 {
		errs = append(errs, fmt.Errorf("--error-status %d: allowed: an HTTP error status, 400 to 599", f.errorStatus))
		cfg.Faults.ErrorStatus = workload.DefaultErrorStatus
	} else if changed("error-status") && isKind(kind) && cfg.Kind != workload.KindStatic {
		errs = append(errs, errors.New("--error-status applies to the static workload only (grpc answers UNAVAILABLE, tcp resets the connection)"))
	}
	if f.delayDist != "" {
		d, err := workload.ParseDistribution(f.delayDist)
		if err != nil {
			errs = append(errs, fmt.Errorf("--delay-dist: %w", err))
		}
		cfg.Faults.RandomDelay = d
	}
	if f.grace < 0 {
		errs = append(errs, fmt.Errorf("--grace %s: allowed: 0s (close at once) or more", f.grace))
	}
	if f.readyFile != "" {
		if fi, err := os.Stat(filepath.Dir(f.readyFile)); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("--ready-file %s: allowed: a file in an existing directory", f.readyFile))
		}
	}
	errs = append(errs, serveConfigErrors(cfg.Validate())...)
	if len(errs) > 0 {
		return cfg, &UsageError{Err: errors.Join(errs...)}
	}
	return cfg, nil
}

func isKind(s string) bool {
	for _, k := range workload.Kinds {
		if string(k) == s {
			return true
		}
	}
	return false
}

// serveConfigErrors rewrites workload.Config.Validate's problems in terms of the
// command line: fields become --flags, the kind the positional argument.
func serveConfigErrors(err error) []error {
	if err == nil {
		return nil
	}
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	out := make([]error, 0, len(list))
	for _, e := range list {
		var ce *workload.ConfigError
		switch {
		case !errors.As(e, &ce):
			out = append(out, e)
		case ce.Field == "kind":
			out = append(out, fmt.Errorf("workload kind %s: %s", ce.Value, ce.Want))
		default:
			out = append(out, fmt.Errorf("--%s %s: %s", ce.Field, ce.Value, ce.Want))
		}
	}
	return out
}

// runServe starts the workload, announces it and serves until ctx is
// cancelled, then shuts down within --grace.
func runServe(ctx context.Context, env *Env, cfg workload.Config, f *serveFlags) error {
	srv, err := workload.Start(ctx, cfg)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return usagef("--listen %s: %v; allowed: an address of this machine, e.g. 127.0.0.1:8080", cfg.Listen, dnsErr)
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w (another process listens on %s: stop it, or pick another --listen; port 0 picks a free one)", err, cfg.Listen)
		}
		return err
	}
	stop := func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.grace)
		defer cancel()
		err := srv.Shutdown(sctx)
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(env.Stderr, "meshbench: serve: requests still in flight after --grace %s were cut off\n", f.grace)
			return nil
		}
		return err
	}
	if f.readyFile != "" {
		if err := writeFileAtomic(f.readyFile, srv.Addr()+"\n"); err != nil {
			_ = stop()
			return fmt.Errorf("writing --ready-file: %w", err)
		}
		defer os.Remove(f.readyFile)
	}
	fmt.Fprintf(env.Stdout, "READY %s %s\n", srv.Kind(), srv.Addr())
	defer func() {
		if line := delaysLine(cfg, srv.Delays()); line != "" {
			fmt.Fprintln(env.Stderr, "meshbench: serve: "+line)
		}
	}()
	select {
	case <-ctx.Done():
		if err := stop(); err != nil {
			return fmt.Errorf("stopping %s workload on %s: %w", srv.Kind(), srv.Addr(), err)
		}
		return nil
	case <-srv.Done():
		_ = stop()
		return fmt.Errorf("%s workload on %s stopped accepting: %w", srv.Kind(), srv.Addr(), srv.Err())
	}
}

// writeFileAtomic writes data to a temporary file next to path and renames it
// over path, so readers see either no file or the whole content.
func writeFileAtomic(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// checkListen adds to the workload's own check of --listen (host:port, a
// port from 0 to 65535): a host written as numbers must be an IP address.
func checkListen(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err == nil && host != "" && strings.Trim(host, "0123456789.") == "" && net.ParseIP(host) == nil {
		return fmt.Errorf("--listen %q: %s is not an IPv4 address; allowed: host:port, e.g. 127.0.0.1:8080 or 127.0.0.1:0", listen, host)
	}
	return nil
}
