package preflight

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// state is what the test table's checks read: whether the "server" is up
// and which meshes are asked for.
type state struct {
	up     bool
	meshes []string
	ran    []string // checks whose function ran, in order
}

func table() []Check[*state] {
	return []Check[*state]{
		{Name: "server", Fatal: true, SkipReason: "no server", Run: One(func(_ context.Context, s *state) Result {
			s.ran = append(s.ran, "server")
			if !s.up {
				return Result{Name: "server", Detail: "refused"}
			}
			return Result{Name: "server", OK: true, Detail: "up"}
		})},
		{Name: "disk", Hint: "free some space", Run: One(func(_ context.Context, s *state) Result {
			s.ran = append(s.ran, "disk")
			return Result{Name: "disk", Detail: "full"}
		})},
		{Name: "cli", Independent: true, Hint: "install it", Run: One(func(_ context.Context, s *state) Result {
			s.ran = append(s.ran, "cli")
			return Result{Name: "cli", Warn: true, Detail: "old"}
		})},
		{Name: "mesh", Hint: "install the mesh",
			Rows: func(s *state) []string {
				var out []string
				for _, m := range s.meshes {
					out = append(out, "mesh "+m)
				}
				return out
			},
			Run: func(_ context.Context, s *state) []Result {
				s.ran = append(s.ran, "mesh")
				var out []Result
				for _, m := range s.meshes {
					out = append(out, Result{Name: "mesh " + m, OK: m == "a", Detail: "checked"})
				}
				return out
			}},
	}
}

func render(rs []Result) string {
	var b strings.Builder
	for _, r := range rs {
		st := "ok"
		switch {
		case r.Warn:
			st = "warn"
		case r.Failed():
			st = "FAIL"
		}
		fmt.Fprintf(&b, "%s|%s|%s\n", r.Name, st, r.Detail)
	}
	return b.String()
}

// TestRun: the table walked in order, hints on failed rows only, a fatal
// failure skipping every later dependent check (one row per named row)
// while independent ones still run.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *state
		want string
		ran  string
	}{
		// server up: every check runs; the failed disk and mesh b rows
		// carry their hints, the warning and the OK rows do not
		{"up", &state{up: true, meshes: []string{"a", "b"}},
			"server|ok|up\ndisk|FAIL|full (free some space)\ncli|warn|old\nmesh a|ok|checked\nmesh b|FAIL|checked (install the mesh)\n",
			"server disk cli mesh"},
		// server down: its row fails without a hint (it has none), disk
		// and both mesh rows are skipped (no hint on a skipped row), the
		// independent cli still runs
		{"down", &state{meshes: []string{"a", "b"}},
			"server|FAIL|refused\ndisk|FAIL|skipped: no server\ncli|warn|old\nmesh a|FAIL|skipped: no server\nmesh b|FAIL|skipped: no server\n",
			"server cli"},
		// server down and no mesh asked: the mesh check has no rows to skip
		{"down, no meshes", &state{},
			"server|FAIL|refused\ndisk|FAIL|skipped: no server\ncli|warn|old\n",
			"server cli"},
	} {
		got := render(Run(context.Background(), table(), tc.s))
		if got != tc.want {
			t.Errorf("%s: rows\n%s\nwant\n%s", tc.name, got, tc.want)
		}
		if ran := strings.Join(tc.s.ran, " "); ran != tc.ran {
			t.Errorf("%s: ran %q, want %q", tc.name, ran, tc.ran)
		}
	}
}
