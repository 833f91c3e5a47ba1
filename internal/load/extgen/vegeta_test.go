package extgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// toolBinary is the real tool: $MESHBENCH_VEGETA / $MESHBENCH_FORTIO,
// else the pinned build `make generators` put in InstallDir (make test
// runs it first), else built here from the Go module proxy at the pinned
// version (seconds with the module cache warm). The tests run the real
// tools, not recorded output.
func toolBinary(t *testing.T, name string) string {
	t.Helper()
	testutil.RealPart(t, "the load generator "+name)
	env, pkg := "MESHBENCH_VEGETA", "github.com/tsenart/vegeta/v12@v"+VegetaVersion
	if name == Fortio {
		env, pkg = "MESHBENCH_FORTIO", FortioModule+"@v"+FortioVersion
	}
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p := filepath.Join(InstallDir(), name); isExecutable(p) {
		return p
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "install", pkg)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v: %s", pkg, err, out)
	}
	return filepath.Join(dir, name)
}

// TestVegetaReal: the real vegeta against a real HTTP server, open loop
// at 50 rps for 2 s (vegeta sends exactly rate × duration) and closed
// loop: every request counted, the exact histogram holds each answer, the
// version comes from the binary, and vegeta's own results are kept and
// read by `vegeta report`.
func TestVegetaReal(t *testing.T) {
	bin := toolBinary(t, Vegeta)
	body := strings.Repeat("x", 615)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer srv.Close()
	for _, tt := range []struct {
		name, rate string
		exact      int64 // 0: closed loop, some
	}{
		{"open", "50", 100}, // 50/s × 2 s
		{"closed", "", 0},   // as fast as 2 connections go
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t, Vegeta, tt.rate, 2*time.Second, 2)
			tg, err := loadgen.ParseTarget(srv.URL+"/", false)
			if err != nil {
				t.Fatal(err)
			}
			c.Load.Targets, c.Load.Warmup, c.Path = []loadgen.Target{tg}, 500*time.Millisecond, bin
			c.KeepResults = filepath.Join(t.TempDir(), "vegeta.bin")
			r, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if r.Generator.Name != Vegeta || r.Generator.Version != VegetaVersion {
				t.Errorf("generator %s %s, want vegeta %s", r.Generator.Name, r.Generator.Version, VegetaVersion)
			}
			if (tt.exact > 0 && r.Completed != tt.exact) || r.Completed == 0 || r.Success != r.Completed || r.StatusCodes["200"] != r.Completed {
				t.Errorf("completed %d, success %d, codes %v; want %d, all 200", r.Completed, r.Success, r.StatusCodes, tt.exact)
			}
			if r.BytesIn != 615*r.Completed {
				t.Errorf("bytes in %d, want 615 × %d", r.BytesIn, r.Completed)
			}
			back := roundTrip(t, r)
			lat, err := latency.Decode(back.Latency)
			if err != nil {
				t.Fatal(err)
			}
			if lat.Count() != r.Completed || lat.Percentile(50) <= 0 {
				t.Errorf("latency histogram: %d values, p50 %d ns; want %d, above 0", lat.Count(), lat.Percentile(50), r.Completed)
			}
			out, err := exec.Command(bin, "report", c.KeepResults).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Requests") {
				t.Errorf("vegeta report on the kept results: %v: %s", err, out)
			}
		})
	}
}
