// Package cli holds meshbench's cobra commands. It turns flags into
// configuration and calls into the engine packages; it holds no measurement
// logic of its own.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/bench"
)

// Exit codes returned by Run.
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // the command ran and failed (run error, unreachable target…)
	ExitUsage       = 2   // bad input: flags, arguments, files
	ExitPartial     = 3   // report/compare wrote a partial report: some cells cannot be read (listed in it)
	ExitThresholds  = 99  // a --fail-on condition held or compare found a regression (k6's code for crossed thresholds); the report was written
	ExitInterrupted = 130 // cancelled by SIGINT/SIGTERM; partial results were written
)

// Env is the process state a command may touch. main builds it from the OS;
// tests build it in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Now is the wall clock.
	Now func() time.Time
	// Signals delivers interrupt requests (os.Interrupt, SIGTERM). Each value
	// received cancels the running command's context.
	Signals <-chan os.Signal
	// StdoutIsTTY tells whether stdout is an interactive terminal (live
	// progress and colours are only shown then).
	StdoutIsTTY bool
	// StderrIsTTY tells whether stderr is an interactive terminal.
	StderrIsTTY bool
	// StderrWidth, when not nil, returns stderr's terminal width in
	// columns, or 0 when unknown; it is asked again at every redraw, so a
	// resized terminal is followed. Nil or 0: $COLUMNS, else 80.
	StderrWidth func() int
}

// Version is meshbench's version, set at build time with -ldflags.
var Version = "0.1.0-dev"

// UsageError marks bad input; Run maps it to ExitUsage.
type UsageError = bench.UsageError

// usagef builds a UsageError from a format.
func usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// PartialError says a report was written without some unreadable cells;
// Run maps it to ExitPartial.
type PartialError = bench.PartialError

// ThresholdError lists the --fail-on conditions a finished run met (or
// the regressions compare found); Run prints each and maps it to
// ExitThresholds.
type ThresholdError = bench.ThresholdError

// errInterrupted is returned by commands that stopped because of a signal
// after writing what they had measured.
var errInterrupted = bench.ErrInterrupted

// Run executes one meshbench invocation with args (without the program name)
// and returns the process exit code. Errors are printed once, here.
func Run(ctx context.Context, env *Env, args []string) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if env.Signals != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-env.Signals:
				cancel(errInterrupted)
			case <-done:
			}
		}()
	}

	root := newRootCmd(env)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, errInterrupted) || errors.Is(context.Cause(ctx), errInterrupted) {
		if !errors.Is(err, errInterrupted) {
			fmt.Fprintf(env.Stderr, "meshbench: %v\n", err)
		}
		fmt.Fprintln(env.Stderr, "meshbench: interrupted")
		return ExitInterrupted
	}
	fmt.Fprintf(env.Stderr, "meshbench: %v\n", err)
	var ue *UsageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return ExitUsage
	}
	var pe *PartialError
	if errors.As(err, &pe) {
		return ExitPartial
	}
	var te *ThresholdError
	if errors.As(err, &te) {
		return ExitThresholds
	}
	return ExitFailure
}

func newRootCmd(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "meshbench",
		Short:         "Measure what a service mesh costs: latency, rate, errors, CPU and memory",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &UsageError{Err: err}
	})
	// --version without cobra's -v shorthand: -v means verbosity to users
	// of kubectl and istioctl. `meshbench version` prints the same.
	root.Flags().Bool("version", false, "print meshbench's version and exit")
	root.SetVersionTemplate(versionLine() + "\n")
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print meshbench's version, the Go version it was built with, and the platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(env.Stdout, versionLine())
			return err
		},
	})
	root.AddCommand(newLoadCmd(env))
	root.AddCommand(newServeCmd(env))
	root.AddCommand(newMergeCmd(env))
	root.AddCommand(newRunCmd(env))
	root.AddCommand(newReportCmd(env))
	root.AddCommand(newCompareCmd(env))
	root.AddCommand(newBenchCmd(env))
	root.AddCommand(newDoctorCmd(env))
	root.AddCommand(newImageCmd(env))
	root.AddCommand(newLinkerdControlPlaneCmd(env))
	root.AddCommand(newHogCmd(env))
	root.AddCommand(newNodestatCmd(env))
	root.AddCommand(newMeshCmd(env))
	return root
}

// isCobraUsage recognises cobra's own argument errors (unknown command,
// wrong number of args), which it does not type.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "unknown flag", "unknown shorthand", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// versionLine is what `meshbench version` and --version print.
func versionLine() string {
	return fmt.Sprintf("meshbench version %s (%s %s/%s)", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
