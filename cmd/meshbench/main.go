// Command meshbench measures what a service mesh costs. main only builds the
// process state from the OS and hands it to cli.Run.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/meshbench/meshbench/internal/cli"
	"github.com/meshbench/meshbench/internal/sys/userns"
)

func main() {
	// --substrate netns without root: the same command as root of an
	// unprivileged user namespace (internal/sys/userns), where the kernel
	// allows it; else it goes on and says that it needs root.
	if userns.Wanted(os.Args[1:]) {
		if code, err := userns.Reexec(os.Args[1:]); err == nil {
			os.Exit(code)
		} else {
			os.Stderr.WriteString("meshbench: " + err.Error() + "; trying without\n")
		}
	}
	if userns.Inside() {
		if err := userns.Setup(); err != nil {
			os.Stderr.WriteString("meshbench: " + err.Error() + "\n")
			os.Exit(1)
		}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// A closed stdout or stderr (`meshbench run | head`) must not kill
	// the process mid-run, before it takes its lab down: with SIGPIPE
	// notified (and the notices dropped), such a write fails with EPIPE
	// and the run goes on to its end and its clean-up. Unlike ignoring
	// SIGPIPE, this leaves the children's default in place.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	env := &cli.Env{
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		Getenv:      os.Getenv,
		Now:         time.Now,
		Signals:     sigs,
		StdoutIsTTY: term.IsTerminal(int(os.Stdout.Fd())),
		StderrIsTTY: term.IsTerminal(int(os.Stderr.Fd())),
		StderrWidth: func() int {
			w, _, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
	}
	os.Exit(cli.Run(context.Background(), env, os.Args[1:]))
}
