package sample

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Stats are the minimum, maximum and mean of a series of per-round values,
// in the unit of the field that holds them.
type Stats struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	Avg float64 `json:"avg"`
}

// Figures are a process's or a group's CPU and memory over the rounds in
// which it had at least one sample. For a group, each round's value is the
// sum over the group's processes sampled in that round.
//
// PSS is not read every round (Sampler.PSSEvery): its statistics are over
// the PSSRounds rounds in which every sample summed had a PSS reading. A
// round where only some of them had one (which a Sampler never produces)
// does not count for PSS, so a group's PSS never adds up readings of
// different rounds.
type Figures struct {
	// Rounds is the number of rounds the CPU and RSS statistics are taken
	// over.
	Rounds int `json:"rounds"`
	// PSSRounds is the number of rounds the PSS statistics are taken over
	// (at most Rounds).
	PSSRounds int `json:"pss_rounds"`
	// CPUMillicores: 1000 = one core.
	CPUMillicores Stats `json:"cpu_millicores"`
	// RSSBytes: resident set size (VmRSS), bytes.
	RSSBytes Stats `json:"rss_bytes"`
	// PSSBytes: proportional set size (Pss), bytes, over PSSRounds rounds;
	// all zero when PSSRounds is 0 (no reading, not a measured zero).
	PSSBytes Stats `json:"pss_bytes"`
}

// ProcessSummary is one process's figures.
type ProcessSummary struct {
	Target
	Figures
	// Gaps counts rounds in which the process could not be read but was
	// still there (read errors).
	Gaps int `json:"gaps"`
	// Gone is true when the process exited (or lost its PID) while it was
	// sampled; ExitedBy is when that was seen.
	Gone     bool      `json:"gone"`
	ExitedBy time.Time `json:"exited_by,omitzero"`
}

// GroupSummary is a component's or a category's figures.
type GroupSummary struct {
	// Name is the component or category name.
	Name string `json:"name"`
	// Category is the category the group belongs to (for a category, the
	// category itself).
	Category string `json:"category"`
	// Processes is the number of distinct processes that contributed.
	Processes int `json:"processes"`
	Figures
}

// OverheadSummary is what sampling cost.
type OverheadSummary struct {
	// Rounds is the number of rounds taken.
	Rounds int `json:"rounds"`
	// ProcessesPerRound: processes read per round, the sampler's own
	// included.
	ProcessesPerRound Stats `json:"processes_per_round"`
	// RoundCPUNs: CPU time of one round, nanoseconds.
	RoundCPUNs Stats `json:"round_cpu_ns"`
	// RoundWallNs: wall time of one round, nanoseconds.
	RoundWallNs Stats `json:"round_wall_ns"`
	// CPUMillicores is the sampler's average CPU load: the CPU time of
	// rounds 2…N over the time from round 1 to round N, in millicores
	// (0 with fewer than two rounds).
	CPUMillicores float64 `json:"cpu_millicores"`
	// PSSRounds is the number of rounds that read PSS (Round.HasPSS);
	// NoPSSRounds the number of rounds with samples that did not. Rounds
	// of baselines only (no samples) are neither.
	PSSRounds   int `json:"pss_rounds"`
	NoPSSRounds int `json:"no_pss_rounds"`
	// PSSEveryRounds: the distance, in rounds (by index), between
	// consecutive rounds that read PSS, in the order given; all zero with
	// fewer than two.
	PSSEveryRounds Stats `json:"pss_every_rounds"`
	// RoundCPUNsPSS and RoundCPUNsNoPSS: CPU time of the rounds that read
	// PSS and of the NoPSSRounds, nanoseconds; all zero if none.
	RoundCPUNsPSS   Stats `json:"round_cpu_ns_pss"`
	RoundCPUNsNoPSS Stats `json:"round_cpu_ns_no_pss"`
}

// Summary is every figure derived from a list of rounds.
type Summary struct {
	// Rounds is the number of rounds summarized; First and Last are the
	// start times of the first and last.
	Rounds int       `json:"rounds"`
	First  time.Time `json:"first,omitzero"`
	Last   time.Time `json:"last,omitzero"`
	// Processes, in category order (Categories), then by component, name
	// and PID.
	Processes []ProcessSummary `json:"processes"`
	// Components, in category order, then by name.
	Components []GroupSummary `json:"components"`
	// Categories, in the order of Categories (unknown ones last, by name).
	Categories []GroupSummary `json:"categories"`
	// Total sums every process of each round.
	Total    Figures         `json:"total"`
	Overhead OverheadSummary `json:"overhead"`
}

// acc accumulates min, max and sum of the per-round values of one series;
// pssN counts the rounds with a PSS value.
type acc struct {
	n, pssN       int
	cpu, rss, pss stat
}

type stat struct{ min, max, sum float64 }

func (s *stat) add(v float64, first bool) {
	if first {
		s.min, s.max = v, v
	} else {
		s.min, s.max = math.Min(s.min, v), math.Max(s.max, v)
	}
	s.sum += v
}

func (s stat) stats(n int) Stats {
	if n == 0 {
		return Stats{}
	}
	return Stats{Min: s.min, Max: s.max, Avg: s.sum / float64(n)}
}

// add folds one round's value of the series in; pss counts only if
// hasPSS.
func (a *acc) add(cpu, rss, pss float64, hasPSS bool) {
	first := a.n == 0
	a.cpu.add(cpu, first)
	a.rss.add(rss, first)
	a.n++
	if hasPSS {
		a.pss.add(pss, a.pssN == 0)
		a.pssN++
	}
}

func (a *acc) figures() Figures {
	return Figures{Rounds: a.n, PSSRounds: a.pssN, CPUMillicores: a.cpu.stats(a.n), RSSBytes: a.rss.stats(a.n), PSSBytes: a.pss.stats(a.pssN)}
}

// sums adds up one round's samples of a group; noPSS is set when one of
// them has no PSS reading, which voids the round's PSS sum.
type sums struct {
	cpu, rss, pss float64
	noPSS         bool
}

func (s *sums) add(x Sample) {
	s.cpu += x.CPUMillicores
	s.rss += float64(x.RSSBytes)
	s.pss += float64(x.PSSBytes)
	s.noPSS = s.noPSS || !x.HasPSS
}

// fold adds the round's sums to a.
func (a *acc) fold(s *sums) { a.add(s.cpu, s.rss, s.pss, !s.noPSS) }

type groupKey struct{ category, name string }

type group struct {
	acc
	pids map[Target]bool
}

// Category returns the summary of category name, or nil when no process
// of it was sampled.
func (s Summary) Category(name string) *GroupSummary {
	for i := range s.Categories {
		if s.Categories[i].Name == name {
			return &s.Categories[i]
		}
	}
	return nil
}

// Summarize computes min, max and avg per process, component, category and
// in total. For a group, every round's samples of its processes are summed
// first, and the statistics are taken over the rounds in which the group
// had at least one sample (a round without any is skipped, never counted
// as zero). PSS statistics are taken the same way over the rounds in which
// every sample summed has a PSS reading (see Figures). It is a pure
// function of rounds.
func Summarize(rounds []Round) Summary {
	sum := Summary{Rounds: len(rounds), Processes: []ProcessSummary{}}
	procs := map[Target]*ProcessSummary{}
	procAcc := map[Target]*acc{}
	components := map[groupKey]*group{}
	categories := map[groupKey]*group{}
	var total acc
	var ovCPU, ovWall, ovProcs stat
	var ovCPUAfterFirst time.Duration
	// CPU per round with and without PSS; rounds between PSS rounds.
	var ovPSS, ovNoPSS, pssEvery stat
	var nPSS, nNoPSS, nEvery int
	lastPSS := -1

	proc := func(t Target) *ProcessSummary {
		p, ok := procs[t]
		if !ok {
			p = &ProcessSummary{Target: t}
			procs[t] = p
			procAcc[t] = &acc{}
		}
		return p
	}
	for i, r := range rounds {
		if i == 0 || r.Time.Before(sum.First) {
			sum.First = r.Time
		}
		if i == 0 || r.Time.After(sum.Last) {
			sum.Last = r.Time
		}
		ovCPU.add(float64(r.Overhead.CPU), i == 0)
		ovWall.add(float64(r.Overhead.Wall), i == 0)
		ovProcs.add(float64(r.Overhead.Processes), i == 0)
		if i > 0 {
			ovCPUAfterFirst += r.Overhead.CPU
		}
		if r.HasPSS() {
			ovPSS.add(float64(r.Overhead.CPU), nPSS == 0)
			nPSS++
			if lastPSS >= 0 {
				pssEvery.add(float64(r.Index-lastPSS), nEvery == 0)
				nEvery++
			}
			lastPSS = r.Index
		} else if len(r.Samples) > 0 {
			ovNoPSS.add(float64(r.Overhead.CPU), nNoPSS == 0)
			nNoPSS++
		}

		compSums := map[groupKey]*sums{}
		catSums := map[groupKey]*sums{}
		var totalSums sums
		for _, x := range r.Samples {
			proc(x.Target)
			procAcc[x.Target].add(x.CPUMillicores, float64(x.RSSBytes), float64(x.PSSBytes), x.HasPSS)
			for _, g := range []struct {
				key    groupKey
				groups map[groupKey]*group
				sums   map[groupKey]*sums
			}{
				{groupKey{x.Category, x.Component}, components, compSums},
				{groupKey{x.Category, x.Category}, categories, catSums},
			} {
				if g.groups[g.key] == nil {
					g.groups[g.key] = &group{pids: map[Target]bool{}}
				}
				g.groups[g.key].pids[x.Target] = true
				if g.sums[g.key] == nil {
					g.sums[g.key] = &sums{}
				}
				g.sums[g.key].add(x)
			}
			totalSums.add(x)
		}
		for k, s := range compSums {
			components[k].fold(s)
		}
		for k, s := range catSums {
			categories[k].fold(s)
		}
		if len(r.Samples) > 0 {
			total.fold(&totalSums)
		}
		for _, g := range r.Gaps {
			p := proc(g.Target)
			if g.Gone {
				if !p.Gone || g.Time.Before(p.ExitedBy) {
					p.ExitedBy = g.Time
				}
				p.Gone = true
			} else {
				p.Gaps++
			}
		}
	}

	for t, p := range procs {
		p.Figures = procAcc[t].figures()
		sum.Processes = append(sum.Processes, *p)
	}
	slices.SortFunc(sum.Processes, func(a, b ProcessSummary) int {
		return cmp.Or(categoryOrder(a.Category, b.Category), cmp.Compare(a.Component, b.Component),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.PID, b.PID))
	})
	sum.Components = groupSummaries(components)
	sum.Categories = groupSummaries(categories)
	sum.Total = total.figures()

	sum.Overhead = OverheadSummary{
		Rounds:            len(rounds),
		ProcessesPerRound: ovProcs.stats(len(rounds)),
		RoundCPUNs:        ovCPU.stats(len(rounds)),
		RoundWallNs:       ovWall.stats(len(rounds)),
		PSSRounds:         nPSS,
		NoPSSRounds:       nNoPSS,
		PSSEveryRounds:    pssEvery.stats(nEvery),
		RoundCPUNsPSS:     ovPSS.stats(nPSS),
		RoundCPUNsNoPSS:   ovNoPSS.stats(nNoPSS),
	}
	if span := sum.Last.Sub(sum.First); len(rounds) > 1 && span > 0 {
		sum.Overhead.CPUMillicores = ovCPUAfterFirst.Seconds() / span.Seconds() * 1000
	}
	return sum
}

func groupSummaries(groups map[groupKey]*group) []GroupSummary {
	out := make([]GroupSummary, 0, len(groups))
	for k, g := range groups {
		out = append(out, GroupSummary{Name: k.name, Category: k.category, Processes: len(g.pids), Figures: g.figures()})
	}
	slices.SortFunc(out, func(a, b GroupSummary) int {
		return cmp.Or(categoryOrder(a.Category, b.Category), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// categoryOrder compares categories by their place in Categories; unknown
// ones come last, by name.
func categoryOrder(a, b string) int {
	ia, ib := slices.Index(Categories, a), slices.Index(Categories, b)
	if ia < 0 {
		ia = len(Categories)
	}
	if ib < 0 {
		ib = len(Categories)
	}
	return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a, b))
}

// Window returns the rounds whose start time lies in (from, to]: the rounds
// whose samples measure CPU over intervals ending inside the window (a
// round's CPU covers the interval before it). Zero from or to leaves that
// end open.
func Window(rounds []Round, from, to time.Time) []Round {
	var out []Round
	for _, r := range rounds {
		if (!from.IsZero() && !r.Time.After(from)) || (!to.IsZero() && r.Time.After(to)) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Rollup sums, in every round, the samples that key maps to the same
// group (those it maps to "" are left out), and takes min, max and avg
// over the rounds in which a group had at least one sample, as Summarize
// does for components (PSS over the rounds where every summed sample had
// it). total sums every sample kept, per round. Groups come sorted by
// name, with Category empty. It is the seed reports' per-namespace table
// when key is a sample's namespace (on a cluster, a target's Name is
// "<namespace>/<pod>/<container>").
func Rollup(rounds []Round, key func(Sample) string) (groups []GroupSummary, total Figures) {
	accs := map[string]*group{}
	var tot acc
	for _, r := range rounds {
		round := map[string]*sums{}
		var all sums
		kept := false
		for _, x := range r.Samples {
			k := key(x)
			if k == "" {
				continue
			}
			if accs[k] == nil {
				accs[k] = &group{pids: map[Target]bool{}}
			}
			accs[k].pids[x.Target] = true
			if round[k] == nil {
				round[k] = &sums{}
			}
			round[k].add(x)
			all.add(x)
			kept = true
		}
		for k, s := range round {
			accs[k].fold(s)
		}
		if kept {
			tot.fold(&all)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(accs)) {
		g := accs[k]
		groups = append(groups, GroupSummary{Name: k, Processes: len(g.pids), Figures: g.figures()})
	}
	return groups, tot.figures()
}

// NamespaceTable is the seed reports' per-namespace table of a cluster
// cell: one row per namespace asked for, in that order (one without
// samples has a row with no rounds), TOTAL as their sum per round, and
// Load, a namespace shown apart, in neither.
type NamespaceTable struct {
	Rows  []GroupSummary `json:"rows"`
	Total Figures        `json:"total"`
	// Load is the load generator's namespace (the seed reports' load ran
	// outside the cluster); nil when not asked for.
	Load *GroupSummary `json:"load,omitempty"`
}

// Namespaces is the NamespaceTable of rounds of cluster samples (a
// target's Name is "<namespace>/<pod>/<container>") for namespaces and,
// apart, load ("" for none).
func Namespaces(rounds []Round, namespaces []string, load string) NamespaceTable {
	nsOf := func(x Sample) string {
		n, _, _ := strings.Cut(x.Name, "/")
		return n
	}
	groups, total := Rollup(rounds, func(x Sample) string {
		if n := nsOf(x); slices.Contains(namespaces, n) {
			return n
		}
		return ""
	})
	t := NamespaceTable{Total: total}
	for _, n := range namespaces {
		row := GroupSummary{Name: n}
		if i := slices.IndexFunc(groups, func(g GroupSummary) bool { return g.Name == n }); i >= 0 {
			row = groups[i]
		}
		t.Rows = append(t.Rows, row)
	}
	if load != "" {
		g, _ := Rollup(rounds, func(x Sample) string {
			if nsOf(x) == load {
				return load
			}
			return ""
		})
		row := GroupSummary{Name: load}
		if len(g) == 1 {
			row = g[0]
		}
		t.Load = &row
	}
	return t
}
