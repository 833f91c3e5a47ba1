package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLoadRequestLog: load --request-ids --request-log writes every
// request sent, warm-up marked, with ids of the prefix, service times
// within the latencies, and as many measured ones as the result sent; bad
// values are one line each.
func TestLoadRequestLog(t *testing.T) {
	url := "http://" + testutil.StartServe(t, "static") + "/"
	dir := t.TempDir()
	log := filepath.Join(dir, "requests.jsonl")
	out := filepath.Join(dir, "load.json")
	inv := runCLI(t, nil, "load", "--rate", "200", "--duration", "500ms", "--warmup", "200ms", "--quiet",
		"--request-ids", "cell1", "--request-log", log, "--output-format", "json", "-o", out, url)
	if inv.code != 0 {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reqs, bad, err := hops.ReadRequests(f)
	if err != nil || bad != 0 {
		t.Fatalf("%v, %d malformed", err, bad)
	}
	var measured, warm int64
	for _, q := range reqs {
		if !strings.HasPrefix(q.ID, "cell1-") || len(q.ID) != len(loadgen.RequestID("cell1", 0)) {
			t.Errorf("id %q", q.ID)
		}
		if q.ServiceNs <= 0 || q.LatencyNs < q.ServiceNs || q.Code != 200 {
			t.Errorf("request %+v", q)
		}
		if q.Measured {
			measured++
		} else {
			warm++
		}
	}
	if r := readResult(t, out); measured != r.Sent || warm == 0 {
		t.Errorf("%d measured (result sent %d), %d warm-up", measured, r.Sent, warm)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--request-ids", "a b"}, `--request-ids: request id prefix "a b": allowed:`},
		{[]string{"--request-log", dir}, "--request-log " + dir},
		{[]string{"--request-log", filepath.Join(dir, "r.jsonl"), "--generator", "oha"}, "--request-log: only with meshbench's own engine"},
	} {
		inv := runCLI(t, nil, append(append([]string{"load", "--rate", "10", "--duration", "1s"}, tc.args...), url)...)
		if inv.code != 2 || !strings.Contains(inv.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, inv.code, inv.stderr, tc.want)
		}
	}
}
