package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLoadGeneratorBadInput: what an external generator cannot do is a
// usage error before any load, naming the flag and the way out.
func TestLoadGeneratorBadInput(t *testing.T) {
	addr := testutil.StartServe(t, "static")
	url := "http://" + addr + "/"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown generator", []string{"load", "--generator", "hey", url}, `--generator "hey": allowed: meshbench, oha, wrk2, vegeta, fortio`},
		{"tcp with oha", []string{"load", "--generator", "oha", "tcp://" + addr}, "--generator oha is used for HTTP/1.1 only"},
		{"send tick with oha", []string{"load", "--generator", "oha", "--send-tick", "1ms", url}, "--send-tick 1ms: --generator oha paces by itself; use --generator meshbench"},
		{"h2 with oha", []string{"load", "--generator", "oha", "--http2", url}, "speaks h2"},
		{"fractional rate with wrk2", []string{"load", "--generator", "wrk2", "--rate", "33.3", url}, "wrk2 takes whole requests per second"},
		{"worker share not whole with wrk2", []string{"load", "--generator", "wrk2", "--rate", "100", "--workers", "3", "--worker-index", "0", url},
			"--rate 33.333334/s: wrk2 takes whole requests per second"},
		{"closed loop with wrk2", []string{"load", "--generator", "wrk2", "--max", url}, "wrk2 has no closed loop"},
		{"path without generator", []string{"load", "--generator-path", "/bin/true", url}, "--generator-path: only with --generator oha, wrk2, vegeta or fortio"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inv := runCLI(t, nil, tt.args...)
			if inv.code != ExitUsage || !strings.Contains(inv.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", inv.code, inv.stderr, ExitUsage, tt.want)
			}
			if inv.stdout != "" {
				t.Errorf("stdout %q, want nothing (no load sent)", inv.stdout)
			}
		})
	}
}

// TestRunGeneratorFlag: `run --generator` is for the kube platform (the
// load workers' image holds the tools); the local lab refuses it, saying
// why, and an unknown name is refused on either platform before anything
// starts.
func TestRunGeneratorFlag(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"local lab, unknown", []string{"run", "--generator", "hey"}, `--generator "hey": allowed on the local lab: meshbench, oha, wrk2, vegeta, fortio`},
		{"unknown on kube", []string{"run", "--platform", "kube", "--generator", "hey"}, `--generator "hey": allowed: meshbench, oha, wrk2, vegeta, fortio`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inv := runCLI(t, nil, tt.args...)
			if inv.code != ExitUsage || !strings.Contains(inv.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", inv.code, inv.stderr, ExitUsage, tt.want)
			}
		})
	}
}

// TestLoadGeneratorStandIn: `meshbench load --generator oha` end to end
// with a stand-in that prints oha 1.16.0's recorded output (internal/
// extgen/testdata/standin), so the command's wiring is tested without oha.
func TestLoadGeneratorStandIn(t *testing.T) {
	addr := testutil.StartServe(t, "static")
	bin, err := filepath.Abs(filepath.Join("..", "load", "extgen", "testdata", "standin", "oha"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STANDIN_LOG", filepath.Join(t.TempDir(), "runs.log"))
	t.Setenv("STANDIN_MODE", "")
	out := filepath.Join(t.TempDir(), "r.json")
	inv := runCLI(t, nil, "load", "--generator", "oha", "--generator-path", bin, "--rate", "200", "--duration", "2s",
		"--connections", "4", "-o", out, "http://"+addr+"/")
	if inv.code != 0 {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	for _, want := range []string{"; generator oha 1.16.0", "Status Codes  [code:count]                      200:379  503:21",
		"Generator: oha 1.16.0; histograms exact: from oha's 400 per-request records"} {
		if !strings.Contains(inv.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, inv.stdout)
		}
	}
	r := readResult(t, out)
	if r.Generator == nil || r.Generator.Name != "oha" || r.Completed != 400 {
		t.Errorf("result generator %+v, completed %d", r.Generator, r.Completed)
	}
}

// TestLoadGeneratorOha runs the real oha against a real loopback server
// when oha is on $PATH or in .tools/bin. CI does not install it (a cold `cargo install oha
// --locked` takes over 6 minutes on CI's machine): there this test skips,
// and internal/load/extgen's tests of the parser on oha's recorded output, and
// of the subprocess handling with stand-ins, carry the coverage.
func TestLoadGeneratorOha(t *testing.T) {
	bin, err := exec.LookPath("oha")
	if err != nil {
		// Where bench/loadgen/install.sh puts it.
		bin, err = exec.LookPath(filepath.Join("..", "..", ".tools", "bin", "oha"))
	}
	if err != nil {
		t.Skip("oha is not on $PATH nor in .tools/bin (cargo install oha --version " + extgen.OhaVersion + " --locked): skipping the real-oha run")
	}
	addr := testutil.StartServe(t, "static")
	out := filepath.Join(t.TempDir(), "r.json")
	inv := runCLI(t, nil, "load", "--generator", "oha", "--generator-path", bin, "--rate", "200", "--duration", "2s", "--warmup", "500ms",
		"--connections", "4", "-o", out, "http://"+addr+"/")
	if inv.code != 0 {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	r := readResult(t, out)
	g := r.Generator
	if g == nil || g.Name != "oha" || g.PartialHistograms || !strings.HasPrefix(g.Histograms, "exact:") {
		t.Fatalf("generator %+v", g)
	}
	// 200/s for 2 s: oha's ticker sends 400 (or 401, the tick at the
	// deadline), all answered 200 by the static server. On a busy machine
	// its ticker falls behind and the ticks still queued at the deadline
	// are never sent: the result must then say the rate was not reached.
	if r.Scheduled != 400 || r.Sent < 300 || r.Sent > 401 || r.Success != r.Completed || r.Completed != r.Sent {
		t.Errorf("scheduled %d sent %d completed %d success %d", r.Scheduled, r.Sent, r.Completed, r.Success)
	}
	short := float64(r.Sent) < float64(r.Scheduled)*(1-results.RateShortfallTolerance)
	if p := r.Problems(0, 0); short != (len(p) > 0 && strings.Contains(p[0], "target rate not reached")) {
		t.Errorf("sent %d of %d: problems %q", r.Sent, r.Scheduled, p)
	}
	if r.Latency.Count != r.Completed || r.ServiceTime.Count != r.Completed || r.ScheduleLag.Count != r.Completed {
		t.Errorf("histograms hold %d, %d, %d values for %d requests", r.Latency.Count, r.ServiceTime.Count, r.ScheduleLag.Count, r.Completed)
	}
	if r.BytesIn != 615*r.Completed {
		t.Errorf("bytes in %d, want 615 per answer", r.BytesIn)
	}
	if d := r.AttackDuration(); d < 1500e6 || d > 2100e6 {
		t.Errorf("first to last send %v, want about 2 s", d)
	}
}
