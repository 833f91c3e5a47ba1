package plan

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/load/loadgen"
)

// TestLoadModel: axes.load_model makes the closed loop a value of its own
// axis; plans written before it (rate: [..., max]) read the same way, and
// the canonical YAML writes load_model.
func TestLoadModel(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		rates      []Rate
		models     []string
	}{
		// Both models: the open rates, then the closed loop once.
		{"open and closed", "axes:\n  rate: [300, 100]\n  load_model: [open, closed]\n", []Rate{RatePerSecond(300), RatePerSecond(100), RateOf(loadgen.ClosedLoop)}, []string{"open", "closed"}},
		// Closed alone: no rate per second (the default rate is dropped).
		{"closed only", "axes:\n  load_model: [closed]\n", []Rate{RateOf(loadgen.ClosedLoop)}, []string{"closed"}},
		// Open alone: the rate axis as given.
		{"open only", "axes:\n  rate: [50]\n  load_model: [open]\n", []Rate{RatePerSecond(50)}, []string{"open"}},
		// An old plan with max first: max moves last, load_model is derived.
		{"old rate max", "axes:\n  rate: [max, 300]\n", []Rate{RatePerSecond(300), RateOf(loadgen.ClosedLoop)}, []string{"open", "closed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, "p.yaml", tc.yaml)
			if !slices.Equal(p.Axes.Rate, tc.rates) || !slices.Equal(p.Axes.LoadModels(), tc.models) {
				t.Errorf("rates %v, load models %v; want %v, %v", p.Axes.Rate, p.Axes.LoadModels(), tc.rates, tc.models)
			}
			y := p.YAML()
			if !strings.Contains(string(y), "load_model: ["+strings.Join(tc.models, ", ")+"]") || strings.Contains(string(y), "max") {
				t.Errorf("canonical YAML:\n%s\nwant load_model %v and no rate max", y, tc.models)
			}
			back := mustParse(t, "back.yaml", string(y))
			if !slices.Equal(back.Axes.Rate, p.Axes.Rate) {
				t.Errorf("round trip: rates %v, want %v", back.Axes.Rate, p.Axes.Rate)
			}
		})
	}
}

// TestCompareSetting: compare names axes with two values or more; flags
// and files read it alike.
func TestCompareSetting(t *testing.T) {
	p := mustParse(t, "p.yaml", "axes:\n  policies: [0, 4]\n  rate: [300]\n  load_model: [open, closed]\ncompare: [mesh, policies, load_model]\n")
	if !slices.Equal(p.Compare, []string{"mesh", "policies", "load_model"}) {
		t.Errorf("compare %v", p.Compare)
	}
	f, err := FromFlags(Flags{Policies: "0,4", Compare: "mesh,policies", LoadModel: "open,closed", Rate: "200"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Compare, []string{"mesh", "policies"}) || !slices.Equal(f.Axes.Rate, []Rate{RatePerSecond(200), RateOf(loadgen.ClosedLoop)}) {
		t.Errorf("from flags: compare %v, rates %v", f.Compare, f.Axes.Rate)
	}
	if d := mustParse(t, "d.yaml", ""); !slices.Equal(d.Compare, []string{"mesh"}) {
		t.Errorf("default compare %v, want [mesh]", d.Compare)
	}
}

// TestCompareProblems: every problem of compare and load_model on its own
// line, naming the value and what is allowed.
func TestCompareProblems(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		// An unknown axis and an axis with one value.
		{"compare", "compare: [mesh, color, policies]\n", []string{
			`p.yaml:1: compare "color": allowed: mesh, policies, mtls, load_model, gateway, protocol, replicas, rate, app, generator, fault, connections, payload, proxy_threads, requests_per_connection, placement, arrivals`,
			`p.yaml:1: compare "policies": axes.policies has one value: nothing to compare along it; give it two or more`,
		}},
		// A load model that is neither.
		{"load model word", "axes:\n  load_model: [open, half]\n", []string{
			`p.yaml:2: axes.load_model "half": allowed: open (a constant rate, each of axes.rate), closed (every connection sends when its last answer arrives), bulk (every connection reads one endless answer: bytes per second)`,
		}},
		// max and load_model both: say which to use.
		{"max and load model", "axes:\n  rate: [50, max]\n  load_model: [open, closed]\n", []string{
			`p.yaml:2: axes.rate "max": with axes.load_model, the closed loop is load_model: closed; list only rates per second in axes.rate`,
		}},
		// Rates without open.
		{"rates unused", "axes:\n  rate: [50]\n  load_model: [closed]\n", []string{
			`p.yaml:2: axes.rate: unused: axes.load_model has no open; remove axes.rate or add open to axes.load_model`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("no problem")
			}
			got := strings.Split(err.Error(), "\n")
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestGeneratorAxis: axes.generator crosses each configuration with each
// generator; cells of meshbench's engine keep the IDs they had before the
// axis, the others end in -gNAME; the generator shares the topology (like
// the rate); the baseline pairs the same generator; the canonical YAML
// reads back the same plan.
func TestGeneratorAxis(t *testing.T) {
	p := mustParse(t, "p.yaml", "repetitions: 1\naxes:\n  mesh: [none, sidecar]\n  generator: [meshbench, vegeta, fortio]\ncompare: [mesh, generator]\n")
	var ids []string
	for _, c := range p.Cells() {
		ids = append(ids, c.ID)
	}
	want := []string{
		"none-static-r100-x1-p0-http-pod-mtls-rep1", "none-static-r100-x1-p0-http-pod-mtls-gvegeta-rep1", "none-static-r100-x1-p0-http-pod-mtls-gfortio-rep1",
		"sidecar-static-r100-x1-p0-http-pod-mtls-rep1", "sidecar-static-r100-x1-p0-http-pod-mtls-gvegeta-rep1", "sidecar-static-r100-x1-p0-http-pod-mtls-gfortio-rep1",
	}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("cells %q, want %q", ids, want)
	}
	cells := p.Cells()
	if cells[1].Generator != "vegeta" || cells[1].TopologyKey != cells[0].TopologyKey {
		t.Errorf("cell %+v: want generator vegeta on the topology of %s", cells[1], cells[0].ID)
	}
	if b, ok := p.BaselineOf(cells[4]); !ok || b != "none-static-r100-x1-p0-http-pod-mtls-gvegeta" {
		t.Errorf("baseline of %s: %q %v, want none's vegeta configuration", cells[4].ID, b, ok)
	}
	back := mustParse(t, "back.yaml", string(p.YAML()))
	if !reflect.DeepEqual(back.Axes.Generator, p.Axes.Generator) || !strings.Contains(string(p.YAML()), "generator:") {
		t.Errorf("YAML round trip: generators %q, want %q:\n%s", back.Axes.Generator, p.Axes.Generator, p.YAML())
	}
	// The old one-value key, as kube plans wrote it, still reads.
	k := mustParse(t, "k.yaml", "platform: kube\ngenerator: oha\n")
	if !reflect.DeepEqual(k.Axes.Generator, []string{"oha"}) || !strings.HasSuffix(k.Cells()[0].Config, "-goha") {
		t.Errorf("generator: oha on kube: axis %q, config %s", k.Axes.Generator, k.Cells()[0].Config)
	}
}

// TestSameYAML: a plan.yaml written before the version key resumes with
// the same plan written now; another plan does not.
func TestSameYAML(t *testing.T) {
	now := Defaults().YAML()
	old := []byte(strings.Replace(string(now), "schema: "+FileSchema+"\n", "", 1))
	if string(old) == string(now) {
		t.Fatalf("YAML writes no version line:\n%s", now)
	}
	other := mustParse(t, "o.yaml", "duration: 7s\n").YAML()
	for _, tc := range []struct {
		name string
		a, b []byte
		want bool
	}{
		{"same", now, now, true},              // written now, twice
		{"old and now", old, now, true},       // before the key and after
		{"other plan", now, other, false},     // a different duration
		{"old other plan", old, other, false}, // the same, old form
	} {
		if got := SameYAML(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameYAML = %v, want %v", tc.name, got, tc.want)
		}
	}
}
