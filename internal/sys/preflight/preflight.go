// Package preflight runs a table of checks, linkerd2's healthcheck style:
// each check is a named value with a category, a description, a function
// and a hint; Run walks the table in order and returns one row per
// result, for `meshbench doctor` to print. A check that fails and is
// Fatal makes every later check that depends on it (all but Independent
// ones) a failed row that says it was skipped and why, so the table
// always lists every check.
package preflight

import "context"

// Result is one row of a preflight table: OK, a warning (shown, but does
// not fail the preflight) or a failure, with one line of detail.
type Result struct {
	Name   string
	OK     bool
	Warn   bool // not fatal: shown, but does not fail the preflight
	Detail string
}

// Failed reports whether r fails the preflight (neither OK nor a warning).
func (r Result) Failed() bool { return !r.OK && !r.Warn }

// Check is one check of a table over the state S it inspects (options,
// connections made by earlier checks).
type Check[S any] struct {
	// Category groups the checks of a table ("cluster", "meshes", …).
	Category string
	// Name is the row's name (Rows names a check of several rows).
	Name string
	// Description says what the check asks, for the documentation and
	// the reader of the table.
	Description string
	// Hint is what to do when the check fails; Run appends it to the
	// detail of a failed row (not of a warning, nor of a skipped row):
	// "detail (hint)". Empty: the detail says it already.
	Hint string
	// Fatal: when the check fails, the later checks that are not
	// Independent cannot run; their rows say "skipped: " + SkipReason.
	Fatal      bool
	SkipReason string
	// Independent checks run even after a fatal failure.
	Independent bool
	// Rows names the rows of a check that gives several (one per mesh,
	// say), for the skipped rows; nil: one row named Name.
	Rows func(s S) []string
	// Run runs the check: one result, or one per row.
	Run func(ctx context.Context, s S) []Result
}

// One is a Run of a single result.
func One[S any](f func(ctx context.Context, s S) Result) func(ctx context.Context, s S) []Result {
	return func(ctx context.Context, s S) []Result { return []Result{f(ctx, s)} }
}

// Run walks the table in order and returns every row.
func Run[S any](ctx context.Context, table []Check[S], s S) []Result {
	var out []Result
	skip := ""
	for _, c := range table {
		if skip != "" && !c.Independent {
			names := []string{c.Name}
			if c.Rows != nil {
				names = c.Rows(s)
			}
			for _, n := range names {
				out = append(out, Result{Name: n, Detail: "skipped: " + skip})
			}
			continue
		}
		rows := c.Run(ctx, s)
		for i, r := range rows {
			if r.Failed() {
				if c.Hint != "" {
					rows[i].Detail += " (" + c.Hint + ")"
				}
				if c.Fatal && skip == "" {
					skip = c.SkipReason
				}
			}
		}
		out = append(out, rows...)
	}
	return out
}
