package plan

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

func mustParse(t *testing.T, name, data string) *Plan {
	t.Helper()
	p, err := Parse(name, []byte(data))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	// An empty file, a file of comments and an empty mapping are all the
	// default plan.
	for _, data := range []string{"", "# nothing\n", "{}\n"} {
		p := mustParse(t, "empty.yaml", data)
		if !reflect.DeepEqual(p, Defaults()) {
			t.Errorf("Parse(%q) = %+v, want Defaults() %+v", data, p, Defaults())
		}
	}
	p := Defaults()
	want := &Plan{
		Platform: "local", Repetitions: 3,
		Axes: Axes{
			Mesh: []topology.Mode{"none", "sidecar", "ambient", "waypoint"}, App: []topology.App{"static"},
			Rate: []Rate{RatePerSecond(100)}, Replicas: []int{1}, Policies: []int{0}, Protocol: []topology.Protocol{"http"},
			Gateway: []bool{false}, MTLS: []bool{true}, Generator: []string{"meshbench"},
		},
		Nodes: 1, Duration: 10 * time.Second, Warmup: 2 * time.Second, Drain: 2 * time.Second,
		Connections: 16, SampleInterval: time.Second, ReuseTopology: true, Substrate: "auto", Baseline: "none", Workers: 1,
		Thresholds: Thresholds{RateShortfall: 0.002, Errors: 0.01, LoadCPU: 0.9}, Confidence: 0.95, Compare: []string{"mesh"},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Defaults() = %+v, want %+v", p, want)
	}
	// The defaults as the canonical YAML shows them (the package doc's
	// table must agree with this file).
	testutil.Golden(t, "defaults.golden.yaml", p.YAML())
	if n := len(p.Cells()); n != 4*3 {
		t.Errorf("default plan has %d cells, want 12", n)
	}
}

// TestPartialDefaults: keys given replace their default, the others stay.
func TestPartialDefaults(t *testing.T) {
	p := mustParse(t, "p.yaml", "axes:\n  rate: 50\nthresholds:\n  errors: 0.05\nseed: -7\n")
	if !reflect.DeepEqual(p.Axes.Rate, []Rate{RatePerSecond(50)}) {
		t.Errorf("rate = %v, want [50] (a single value is a list of one)", p.Axes.Rate)
	}
	if p.Thresholds != (Thresholds{RateShortfall: 0.002, Errors: 0.05, LoadCPU: 0.9}) {
		t.Errorf("thresholds = %+v", p.Thresholds)
	}
	if p.Seed == nil || *p.Seed != -7 {
		t.Errorf("seed = %v, want -7", p.Seed)
	}
	if len(p.Axes.Mesh) != 4 || p.Duration != DefaultDuration {
		t.Errorf("defaults lost: %+v", p)
	}
}

func TestRates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // canonical text; "" = rejected
	}{
		{"50", "50"},
		{"50.0", "50"},           // canonical: the shortest form
		{"33.3", "33.3"},         // exact decimals, as loadgen reads them
		{"0.5", "0.5"},           // below one per second is still a rate
		{"max", "max"},           // closed loop
		{"10000000", "10000000"}, // loadgen's maximum
		{"10000001", ""},         // above loadgen's maximum
		{"0", ""},                // not positive
		{"-5", ""},               // not positive
		{"1e3", ""},              // exponents: write the number
		{"60/m", ""},             // per second only in a plan
		{"MAX", ""},              // the word is lower case
		{"", ""},
	} {
		got, ok := parseRate(tc.in)
		if ok != (tc.want != "") || (ok && got.String() != tc.want) {
			t.Errorf("parseRate(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	if !RateOf(loadgen.ClosedLoop).Closed() || testRate(t, "50").Closed() || testRate(t, "33.3").PerSecond() != 33.3 || RateOf(loadgen.ClosedLoop).PerSecond() != 0 {
		t.Error("Rate methods")
	}
}

func readExample(t *testing.T, name string) *Plan {
	t.Helper()
	path := filepath.Join("..", "..", "..", "examples", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, path, string(data))
}

// TestExamples parses every plan in examples/ and checks the cell counts
// and wall times their comments promise.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		p := readExample(t, filepath.Base(f))
		if len(p.Cells()) == 0 {
			t.Errorf("%s: no cells", f)
		}
	}
	for _, tc := range []struct {
		file     string
		cells    int
		estimate time.Duration // at CellOverheadLocal
	}{
		{"quick.yaml", 30, 5 * time.Minute},
		{"seed-matrix.yaml", 120, 34 * time.Minute},
		{"faces.yaml", 24, 24 * 17 * time.Second},
		{"saturation.yaml", 12, 12 * 17 * time.Second},
		{"kube.yaml", 24, 24 * (10 + 60 + 20 + 3) * time.Second},
		// One plan per seed question, each at most 10 minutes on the lab.
		{"uds-ambient-vs-sidecar.yaml", 36, 36 * 10 * time.Second},
		{"uds-policies.yaml", 30, 30 * 10 * time.Second},
		{"nighthawk-four-meshes.yaml", 24, 24 * 10 * time.Second},
		{"sidecar-debate.yaml", 36, 36 * 10 * time.Second},
		{"throttled-vs-unthrottled.yaml", 20, 20 * 10 * time.Second},
		// The seed-002 shape for the lab-vs-cluster table: 4 modes × 2 repetitions.
		{"lab-vs-cluster-istio.yaml", 8, 8 * (2 + 20 + 2 + 3) * time.Second},
	} {
		p := readExample(t, tc.file)
		if n := len(p.Cells()); n != tc.cells {
			t.Errorf("%s: %d cells, want %d", tc.file, n, tc.cells)
		}
		if e := p.Estimate(CellOverheadLocal); e != tc.estimate {
			t.Errorf("%s: estimate %v, want %v", tc.file, e, tc.estimate)
		}
	}
	if e := readExample(t, "quick.yaml").Estimate(CellOverheadLocal); e > 5*time.Minute {
		t.Errorf("quick.yaml takes %v, over the 5-minute budget", e)
	}
}

// TestSeedMatrix: 2 rates × 4 replicas × (none × 1 policy count + 2 meshes
// × 2) = 40 configurations × 3 repetitions = 120 cells; none × policies 4
// is skipped for every replica count.
func TestSeedMatrix(t *testing.T) {
	p := readExample(t, "seed-matrix.yaml")
	cells := p.Cells()
	if len(cells) != 120 {
		t.Fatalf("%d cells, want 120", len(cells))
	}
	configs := map[string]int{}
	topologies := map[string]bool{}
	perMesh := map[topology.Mode]int{}
	for _, c := range cells {
		configs[c.Config]++
		topologies[c.TopologyKey] = true
		perMesh[c.Mesh.Mode]++
		if err := c.Mesh.Validate(); err != nil {
			t.Errorf("cell %s: %v", c.ID, err)
		}
		if c.Mesh.Nodes != 1 || c.Mesh.App != topology.AppStatic {
			t.Errorf("cell %s: %+v", c.ID, c.Mesh)
		}
	}
	if len(configs) != 40 {
		t.Errorf("%d configurations, want 40", len(configs))
	}
	for cfg, n := range configs {
		if n != 3 {
			t.Errorf("configuration %s has %d repetitions, want 3", cfg, n)
		}
	}
	if len(topologies) != 20 { // 4 replicas × (1 + 2×2)
		t.Errorf("%d topologies, want 20", len(topologies))
	}
	if perMesh["none"] != 24 || perMesh["sidecar"] != 48 || perMesh["ambient"] != 48 {
		t.Errorf("cells per mesh %v, want none 24, sidecar 48, ambient 48", perMesh)
	}
	skipped := p.Skipped()
	if len(skipped) != 4 {
		t.Fatalf("skipped %+v, want the 4 none × policies 4 combinations", skipped)
	}
	for i, s := range skipped {
		if s.Mesh.Mode != topology.ModeNone || s.Mesh.Policies != 4 || !strings.Contains(s.Reason, "policies need a mesh mode") {
			t.Errorf("skip %d: %+v", i, s)
		}
	}
	if skipped[3].TopologyKey != "none-static-x90-p4-http-pod-mtls-n1" {
		t.Errorf("skip key %q", skipped[3].TopologyKey)
	}
}

// TestSkipped lists every kind of skipped combination.
func TestSkipped(t *testing.T) {
	p := mustParse(t, "s.yaml", `axes:
  mesh: [none, sidecar, ambient, waypoint]
  policies: [0, 4]
  mtls: [true, false]
  protocol: [http, tcp]
`)
	got := map[string]string{}
	for _, s := range p.Skipped() {
		got[s.TopologyKey] = s.Reason
	}
	for key, reason := range map[string]string{
		"none-static-x1-p4-http-pod-mtls-n1":     "policies need a mesh mode",
		"none-static-x1-p0-http-pod-plain-n1":    "no mTLS to turn off",
		"none-static-x1-p0-tcp-pod-mtls-n1":      "no proxy treats the traffic",
		"ambient-static-x1-p0-http-pod-plain-n1": "HBONE is always mTLS",
		"waypoint-static-x1-p4-tcp-pod-plain-n1": "HBONE is always mTLS",
		"sidecar-static-x1-p4-http-pod-plain-n1": "plaintext has not",
	} {
		if !strings.Contains(got[key], reason) {
			t.Errorf("skip %s: reason %q, want it to say %q", key, got[key], reason)
		}
	}
	// Kept: none once (http, mtls, p0); sidecar: 2 protocols × (mtls × 2
	// policies + plain × p0) = 6; ambient and waypoint: 2 protocols × 2
	// policies = 4 each.
	if n := len(p.Cells()); n != (1+6+4+4)*3 {
		t.Errorf("%d cells, want %d", n, (1+6+4+4)*3)
	}
	if n := len(p.Skipped()); n != 4*2*2*2-(1+6+4+4) {
		t.Errorf("%d skipped, want %d", n, 32-15)
	}
	// With a gateway, protocol tcp matters to mode none: not skipped.
	p = mustParse(t, "g.yaml", "axes:\n  mesh: [none]\n  protocol: [http, tcp]\n  gateway: [true]\n")
	if n := len(p.Cells()); n != 2*3 {
		t.Errorf("none through a gateway: %d cells, want 6", n)
	}
	// mtls false alone: mode none runs with it (nothing to fold into).
	p = mustParse(t, "m.yaml", "axes:\n  mesh: [none, sidecar]\n  mtls: [false]\n")
	if n := len(p.Cells()); n != 2*3 {
		t.Errorf("plaintext plan: %d cells, want 6", n)
	}
}

var safeID = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)

func TestCellIDs(t *testing.T) {
	p := mustParse(t, "ids.yaml", `repetitions: 2
nodes: 2
axes:
  mesh: [none, sidecar, ambient, waypoint]
  app: [static, faces]
  rate: [33.3, 50, max]
  replicas: [1, 2]
  policies: [0, 5]
  protocol: [http, tcp]
  gateway: [false, true]
  mtls: [true, false]
`)
	cells := p.Cells()
	seen := map[string]bool{}
	for _, c := range cells {
		if seen[c.ID] {
			t.Errorf("duplicate ID %s", c.ID)
		}
		seen[c.ID] = true
		if !safeID.MatchString(c.ID) || !safeID.MatchString(c.TopologyKey) || len(c.ID) > 64 {
			t.Errorf("ID %q / key %q: not file-name safe or too long", c.ID, c.TopologyKey)
		}
		if c.ID != c.Config+"-rep"+string(rune('0'+c.Repetition)) {
			t.Errorf("ID %q, Config %q, repetition %d", c.ID, c.Config, c.Repetition)
		}
		if c.Repetition < 1 || c.Repetition > 2 {
			t.Errorf("%s: repetition %d", c.ID, c.Repetition)
		}
	}
	// The documented example.
	p = mustParse(t, "one.yaml", "axes: {mesh: [sidecar, none], rate: [50], replicas: [10], policies: [4, 0]}\n")
	var ids []string
	for _, c := range p.Cells() {
		ids = append(ids, c.ID)
	}
	if !contains(ids, "sidecar-static-r50-x10-p4-http-pod-mtls-rep2") || !contains(ids, "none-static-r50-x10-p0-http-pod-mtls-rep1") {
		t.Errorf("IDs %v", ids)
	}
	// IDs do not depend on the order the axes list their values in.
	q := mustParse(t, "two.yaml", "axes: {mesh: [none, sidecar], rate: [50.0], replicas: [10], policies: [0, 4]}\n")
	if a, b := idSet(p.Cells()), idSet(q.Cells()); !reflect.DeepEqual(a, b) {
		t.Errorf("IDs depend on axis order:\n%v\n%v", a, b)
	}
	c := p.Cells()[0]
	if c.TopologyKey != "sidecar-static-x10-p4-http-pod-mtls-n1" || c.Rate.String() != "50" || c.Mesh.Policies != 4 || c.Mesh.Replicas != 10 {
		t.Errorf("cell %+v", c)
	}
}

func idSet(cells []Cell) map[string]bool {
	m := map[string]bool{}
	for _, c := range cells {
		m[c.ID] = true
	}
	return m
}

func TestOrder(t *testing.T) {
	p := readExample(t, "seed-matrix.yaml")
	cells := p.Cells()
	for _, reuse := range []bool{false, true} {
		a, b := p.Order(42, reuse), p.Order(42, reuse)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("reuse %v: Order(42) differs between calls", reuse)
		}
		if !reflect.DeepEqual(idSet(a), idSet(cells)) || len(a) != len(cells) {
			t.Errorf("reuse %v: Order is not a permutation of Cells", reuse)
		}
		if reflect.DeepEqual(ids(a), ids(p.Order(43, reuse))) {
			t.Errorf("reuse %v: seeds 42 and 43 give the same order", reuse)
		}
		if reflect.DeepEqual(ids(a), ids(cells)) {
			t.Errorf("reuse %v: Order(42) is the Cells order", reuse)
		}
	}

	// Without reuse: round r holds every configuration's repetition r.
	o := p.Order(1, false)
	for i, c := range o {
		if want := i/40 + 1; c.Repetition != want {
			t.Fatalf("position %d: %s in round %d", i, c.ID, want)
		}
	}
	// The rounds are shuffled independently.
	if reflect.DeepEqual(configs(o[:40]), configs(o[40:80])) {
		t.Error("rounds 1 and 2 run the configurations in the same order")
	}

	// With reuse: still in rounds, and within a round every topology's
	// cells are contiguous (20 topologies × 2 rates: 20 stretches a round).
	o = p.Order(1, true)
	for i, c := range o {
		if want := i/40 + 1; c.Repetition != want {
			t.Fatalf("reuse: position %d: %s in round %d", i, c.ID, want)
		}
	}
	var firsts []string
	for r := 0; r < 3; r++ {
		round := o[r*40 : (r+1)*40]
		done := map[string]bool{}
		for i, c := range round {
			if i > 0 && round[i-1].TopologyKey != c.TopologyKey {
				if done[c.TopologyKey] {
					t.Fatalf("round %d: topology %s comes back at position %d", r+1, c.TopologyKey, i)
				}
				done[round[i-1].TopologyKey] = true
			}
		}
		if len(done)+1 != 20 {
			t.Errorf("round %d: %d topology stretches, want 20", r+1, len(done)+1)
		}
		firsts = append(firsts, round[0].TopologyKey+round[2].TopologyKey+round[4].TopologyKey)
	}
	if firsts[0] == firsts[1] && firsts[1] == firsts[2] {
		t.Error("reuse: every round runs the topologies in the same order")
	}

	// Independent of the order the file lists its values in.
	q := mustParse(t, "rev.yaml", `repetitions: 3
axes:
  mesh: [ambient, sidecar, none]
  rate: [50, 20]
  replicas: [90, 50, 10, 1]
  policies: [4, 0]
`)
	if !reflect.DeepEqual(ids(q.Order(7, false)), ids(p.Order(7, false))) || !reflect.DeepEqual(ids(q.Order(7, true)), ids(p.Order(7, true))) {
		t.Error("Order depends on the order of axis values")
	}
}

// TestOrderGolden pins the order a seed stands for: a recorded seed must
// replay the same order after any change to meshbench.
func TestOrderGolden(t *testing.T) {
	p := mustParse(t, "small.yaml", "repetitions: 2\naxes:\n  mesh: [none, sidecar, ambient]\n  rate: [20, 50]\n")
	var b strings.Builder
	for _, reuse := range []bool{false, true} {
		b.WriteString("reuse " + map[bool]string{false: "false", true: "true"}[reuse] + ":\n")
		for _, c := range p.Order(42, reuse) {
			b.WriteString("  " + c.ID + "\n")
		}
	}
	testutil.Golden(t, "order-seed42.golden", []byte(b.String()))
}

func ids(cells []Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.ID
	}
	return out
}

func configs(cells []Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.Config
	}
	return out
}

func TestShuffleUniform(t *testing.T) {
	// Every permutation of 3 equally often, within 5%, over 60000 draws.
	counts := map[[3]int]int{}
	rng := newOrderRNG(3)
	for range 60000 {
		v := [3]int{0, 1, 2}
		shuffle(rng, 3, func(i, j int) { v[i], v[j] = v[j], v[i] })
		counts[v]++
	}
	if len(counts) != 6 {
		t.Fatalf("%d permutations seen, want 6", len(counts))
	}
	for perm, n := range counts {
		if n < 9500 || n > 10500 {
			t.Errorf("permutation %v: %d of 60000", perm, n)
		}
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	seed := int64(-12345)
	plans := []*Plan{Defaults()}
	for _, f := range []string{"quick.yaml", "seed-matrix.yaml", "faces.yaml", "saturation.yaml", "kube.yaml"} {
		plans = append(plans, readExample(t, f))
	}
	odd := mustParse(t, "odd.yaml", `name: odd_1.x
seed: 9
repetitions: 1
axes:
  mesh: [sidecar, none]
  rate: [0.001, max, 33.3]
  mtls: [false, true]
  gateway: [true, false]
  protocol: [tcp, http]
nodes: 3
duration: 1m30s
warmup: 0s
drain: 250ms
pss_every: 5
substrate: netns
body_size: 1024
baseline: sidecar
thresholds: {rate_shortfall: 0, errors: 1, load_cpu: 1}
confidence: 0.999
`)
	plans = append(plans, odd)
	withSeed := Defaults()
	withSeed.Seed = &seed
	plans = append(plans, withSeed)
	for i, p := range plans {
		y := p.YAML()
		q, err := Parse("canonical.yaml", y)
		if err != nil {
			t.Fatalf("plan %d: canonical YAML does not parse: %v\n%s", i, err, y)
		}
		if !reflect.DeepEqual(p, q) {
			t.Errorf("plan %d: round trip changed it:\n%+v\n%+v\n%s", i, p, q, y)
		}
		if y2 := q.YAML(); string(y2) != string(y) {
			t.Errorf("plan %d: YAML not stable:\n%s\n%s", i, y, y2)
		}
	}
	testutil.Golden(t, "seed-matrix.canonical.yaml", plans[2].YAML())
}

func TestBaselineOf(t *testing.T) {
	p := readExample(t, "seed-matrix.yaml")
	for _, tc := range []struct{ cell, want string }{
		{"sidecar-static-r50-x10-p4-http-pod-mtls-rep2", "none-static-r50-x10-p0-http-pod-mtls"},
		{"ambient-static-r20-x90-p0-http-pod-mtls-rep1", "none-static-r20-x90-p0-http-pod-mtls"},
		{"none-static-r20-x1-p0-http-pod-mtls-rep3", "none-static-r20-x1-p0-http-pod-mtls"},
	} {
		c := cellByID(t, p.Cells(), tc.cell)
		got, ok := p.BaselineOf(c)
		if !ok || got != tc.want {
			t.Errorf("BaselineOf(%s) = %q, %v; want %q", tc.cell, got, ok, tc.want)
		}
	}
	// Against sidecar, plaintext none folds into mtls true, and ambient
	// keeps its policies.
	q := mustParse(t, "b.yaml", "baseline: sidecar\naxes: {mesh: [none, sidecar, ambient], policies: [0, 4], mtls: [true, false]}\n")
	for _, tc := range []struct{ cell, want string }{
		{"ambient-static-r100-x1-p4-http-pod-mtls-rep1", "sidecar-static-r100-x1-p4-http-pod-mtls"},
		{"none-static-r100-x1-p0-http-pod-mtls-rep1", "sidecar-static-r100-x1-p0-http-pod-mtls"},
		{"sidecar-static-r100-x1-p0-http-pod-plain-rep1", "sidecar-static-r100-x1-p0-http-pod-plain"},
	} {
		got, ok := q.BaselineOf(cellByID(t, q.Cells(), tc.cell))
		if !ok || got != tc.want {
			t.Errorf("BaselineOf(%s) = %q, %v; want %q", tc.cell, got, ok, tc.want)
		}
	}
}

func cellByID(t *testing.T, cells []Cell, id string) Cell {
	t.Helper()
	for _, c := range cells {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no cell %s", id)
	return Cell{}
}

// TestKubePlan: platform kube takes linkerd, has its own defaults (metrics
// period 10 s, drain two periods, no topology reuse, 1 worker) and skips
// linkerd without mTLS.
func TestKubePlan(t *testing.T) {
	p := mustParse(t, "k.yaml", `platform: kube
axes:
  mesh: [none, linkerd, sidecar]
  mtls: [true, false]
workers: 3
`)
	if p.Platform != PlatformKube || p.Workers != 3 || p.SampleInterval != 10*time.Second || p.Drain != time.Minute || p.ReuseTopology {
		t.Errorf("kube plan = platform %s, workers %d, sample interval %v, drain %v, reuse %v; want kube, 3, 10s, 1m, false",
			p.Platform, p.Workers, p.SampleInterval, p.Drain, p.ReuseTopology)
	}
	var ids []string
	for _, c := range p.Cells() {
		if c.Repetition == 1 {
			ids = append(ids, c.ID)
		}
	}
	want := []string{"none-static-r100-x1-p0-http-pod-mtls-rep1", "linkerd-static-r100-x1-p0-http-pod-mtls-rep1",
		"sidecar-static-r100-x1-p0-http-pod-mtls-rep1", "sidecar-static-r100-x1-p0-http-pod-plain-rep1"}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("cells:\n%s\nwant:\n%s", strings.Join(ids, "\n"), strings.Join(want, "\n"))
	}
	var skipped []string
	for _, s := range p.Skipped() {
		skipped = append(skipped, s.Reason)
	}
	if !slices.Contains(skipped, "mesh linkerd with mtls false: Linkerd's mTLS between meshed pods is always on") {
		t.Errorf("skipped: %q; want linkerd without mTLS among them", skipped)
	}
	// A given drain and sample interval stay as given.
	q := mustParse(t, "k.yaml", "platform: kube\nsample_interval: 30s\n")
	if q.Drain != 90*time.Second {
		t.Errorf("drain with a 30s period = %v, want 90s (three periods)", q.Drain)
	}
	q = mustParse(t, "k.yaml", "platform: kube\nsample_interval: 15s\ndrain: 5s\n")
	if q.Drain != 5*time.Second {
		t.Errorf("drain given as 5s = %v", q.Drain)
	}
	if e := p.Estimate(p.CellOverhead()); e != time.Duration(len(p.Cells()))*(2*time.Second+10*time.Second+20*time.Second+55*time.Second) {
		t.Errorf("estimate %v", e)
	}
}

// testRate is the rate axis value s, which must parse.
func testRate(tb testing.TB, s string) Rate {
	tb.Helper()
	r, ok := parseRate(s)
	if !ok {
		tb.Fatalf("parseRate(%q) failed", s)
	}
	return r
}

// TestNoBaseline: a plan without mesh none and without a baseline is
// not refused (the default never refuses): it has no baseline, no cell
// has a baseline configuration, and its YAML reads back the same; a
// baseline named but absent stays an error.
func TestNoBaseline(t *testing.T) {
	for _, p := range []*Plan{
		mustParse(t, "p.yaml", "axes: {mesh: [sidecar, ambient]}\n"),
		func() *Plan {
			p, err := FromFlags(Flags{Mesh: "ambient", Policies: "0,4", Compare: "policies"})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}(),
	} {
		if p.Baseline != "" {
			t.Errorf("baseline %q, want none", p.Baseline)
		}
		for _, c := range p.Cells() {
			if b, ok := p.BaselineOf(c); ok {
				t.Errorf("%s: baseline configuration %s", c.ID, b)
			}
		}
		q := mustParse(t, "plan.yaml", string(p.YAML()))
		if q.Baseline != "" || string(q.YAML()) != string(p.YAML()) {
			t.Errorf("read back: baseline %q, YAML\n%s\nwant\n%s", q.Baseline, q.YAML(), p.YAML())
		}
	}
	if _, err := Parse("p.yaml", []byte("baseline: none\naxes: {mesh: [sidecar]}\n")); err == nil {
		t.Error("an absent baseline named in the plan was accepted")
	}
}
