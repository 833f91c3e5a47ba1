package bench

import (
	"errors"
	"fmt"
	"strings"
)

// UsageError marks bad input (exit 2 in the CLI).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// usagef builds a UsageError from a format.
func usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// PartialError says a report was written without some unreadable cells
// (exit 3 in the CLI).
type PartialError struct{ Err error }

func (e *PartialError) Error() string { return e.Err.Error() }
func (e *PartialError) Unwrap() error { return e.Err }

// ThresholdError lists the --fail-on conditions a finished run met (or
// the regressions compare found); the CLI prints each and exits 99.
type ThresholdError struct{ Crossed []string }

func (e *ThresholdError) Error() string {
	return "failed: " + strings.Join(e.Crossed, "; ")
}

// ErrInterrupted is returned when a run stopped because of a signal after
// writing what it had measured (exit 130 in the CLI).
var ErrInterrupted = errors.New("interrupted")
