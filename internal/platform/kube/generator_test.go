package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
)

// TestOptionsGenerator: a run whose load generator cannot do its workers'
// shares is refused before anything is deployed, naming the worker.
func TestOptionsGenerator(t *testing.T) {
	for _, tt := range []struct {
		name      string
		generator string
		rate      string
		workers   int
		want      string // "" valid
	}{
		{"engine", "", "100", 3, ""},
		{"oha, fractional shares", "oha", "100", 3, ""},
		{"wrk2, whole shares", "wrk2", "100", 4, ""},
		{"wrk2, fractional shares", "wrk2", "100", 3, "worker 0 of 3: --rate 33.333334/s: wrk2 takes whole requests per second"},
		// The seeds' tools, in meshbench's image by default.
		{"vegeta", "vegeta", "100", 2, ""},
		{"fortio", "fortio", "100", 2, ""},
		{"unknown", "hey", "100", 1, "generator hey: allowed: meshbench, oha, wrk2, vegeta, fortio"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(topology.ModeNone, topology.AppStatic, 0)
			o := Options{Settings: platform.Settings{Mesh: s.Mesh, Load: testLoad(t, tt.rate), Workers: tt.workers,
				Duration: 10 * time.Second, Generator: tt.generator}, Spec: s, OutDir: t.TempDir()}
			err := o.defaults()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
