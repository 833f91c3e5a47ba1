package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Problem is one thing wrong with a plan, as Parse and FromFlags report
// it (joined with errors.Join).
type Problem struct {
	File  string // the plan file's name; "" for flags
	Line  int    // 1-based line in File; 0 when unknown or for flags
	Field string // "axes.rate" in a file, "--rate" for flags; "" for YAML syntax errors
	Value string // the value as written (quoted when it is text); may be ""
	Want  string // what is allowed, or why the value cannot work

	order int // schema position, to sort problems of one line (or of flags)
}

// Error returns one line: "FILE:LINE: FIELD VALUE: WANT" for a file,
// "FIELD VALUE: WANT" for flags.
func (p *Problem) Error() string {
	var b strings.Builder
	switch {
	case p.File != "" && p.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", p.File, p.Line)
	case p.File != "":
		b.WriteString(p.File + ": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		if p.Value != "" {
			b.WriteString(" " + cutValue(p.Value))
		}
		b.WriteString(": ")
	}
	b.WriteString(p.Want)
	return b.String()
}

// maxEchoed bounds how much of a bad value an error message repeats.
const maxEchoed = 80

// cutValue shortens a value echoed in a message to maxEchoed bytes (on a
// rune boundary), saying how long it was: a 50-MB plan name must not come
// back whole on the terminal.
func cutValue(v string) string {
	if len(v) <= maxEchoed {
		return v
	}
	n := maxEchoed
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", v[:n], len(v))
}

// problems collects Problems once each.
type problems struct {
	list []*Problem
	seen map[string]bool
}

func (ps *problems) add(p *Problem) {
	if ps.seen == nil {
		ps.seen = map[string]bool{}
	}
	k := p.Error()
	if ps.seen[k] {
		return
	}
	ps.seen[k] = true
	ps.list = append(ps.list, p)
}

// err sorts the problems by line, then by schema order, and joins them.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	sort.SliceStable(ps.list, func(i, j int) bool {
		a, b := ps.list[i], ps.list[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.order < b.order
	})
	errs := make([]error, len(ps.list))
	for i, p := range ps.list {
		errs[i] = p
	}
	return errors.Join(errs...)
}
