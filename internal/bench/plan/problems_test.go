package plan

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestBadPlans: each plan's problems, all of them, one line each, with
// the line of the value at fault.
func TestBadPlans(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		// A typo in a key: the line, and the likely key.
		{"unknown key", "durtion: 5s\naxes:\n  rates: [20]\n", []string{
			`p.yaml:1: durtion: unknown key (did you mean duration?); allowed: schema, name, platform, seed, repetitions, axes, nodes, duration, warmup, drain, connections, send_tick, sample_interval, pss_every, reuse_topology, substrate, control_plane, workers, generator, baseline, compare, thresholds, confidence, search, app_concurrency, app_service_time, body_size, app_delay, app_delay_dist, app_error_ratio, app_error_status, app_stall_every, app_stall_for, app_seed, hops`,
			`p.yaml:3: axes.rates: unknown key (did you mean rate?); allowed: mesh, app, rate, load_model, replicas, policies, protocol, gateway, mtls, generator, fault, connections, payload, proxy_threads, requests_per_connection, placement, arrivals`,
		}},
		// A plan file of another format version: named, with the one this
		// meshbench reads (a file without the key is read as it).
		{"schema version", "schema: meshbench.plan-file/v2\nduration: 5s\n", []string{
			`p.yaml:1: schema "meshbench.plan-file/v2": allowed: meshbench.plan-file/v1 (the plan format this meshbench reads), or no schema key`,
		}},
		// Nothing like any key: no suggestion.
		{"unknown key far", "thresholds:\n  latency_p99: 3\n", []string{
			`p.yaml:2: thresholds.latency_p99: unknown key; allowed: rate_shortfall, errors, load_cpu`,
		}},
		// Every rate problem on its own line.
		{"rates", "axes:\n  rate:\n    - -5\n    - 0\n    - 60/m\n    - 20\n    - 20.0\n    - fast\n", []string{
			`p.yaml:3: axes.rate "-5": allowed: positive numbers (requests per second, at most 10000000) or max`,
			`p.yaml:4: axes.rate "0": allowed: positive numbers (requests per second, at most 10000000) or max`,
			`p.yaml:5: axes.rate "60/m": allowed: positive numbers (requests per second, at most 10000000) or max`,
			`p.yaml:7: axes.rate "20.0": given twice (first on line 6)`,
			`p.yaml:8: axes.rate "fast": allowed: positive numbers (requests per second, at most 10000000) or max`,
		}},
		// Mode, app and protocol values go through topology.Options.Validate.
		{"enums", "axes:\n  mesh: [none, linkerd, istio]\n  app: [faces, bookinfo]\n  protocol: [grpc]\n", []string{
			`p.yaml:2: axes.mesh "istio": allowed: none, sidecar, ambient, waypoint, linkerd`,
			`p.yaml:3: axes.app "bookinfo": allowed: static, faces`,
			`p.yaml:4: axes.protocol "grpc": allowed: http, tcp`,
		}},
		// What only one platform takes.
		{"platforms", "platform: local\nworkers: 2\ngenerator: hey\n", []string{
			`p.yaml:2: workers "2": only on platform kube (the local lab runs one load generator)`,
			`p.yaml:3: generator "hey": allowed on platform local: meshbench, oha, wrk2, vegeta, fortio`,
		}},
		// a generator meshbench's image cannot hold
		{"generator", "platform: kube\ngenerator: hey\n", []string{
			`p.yaml:2: generator "hey": allowed on platform kube (meshbench's image): meshbench, oha, wrk2, vegeta, fortio`,
		}},
		// the axis: an unknown value, a duplicate, and the old key beside it
		{"generator axis", "generator: oha\naxes:\n  generator: [meshbench, vegeta, Vegeta, k6]\n", []string{
			`p.yaml:1: generator "oha": given with axes.generator: remove it and list the generators under axes.generator`,
			`p.yaml:3: axes.generator "Vegeta": given twice`,
			`p.yaml:3: axes.generator "k6": allowed on platform local: meshbench, oha, wrk2, vegeta, fortio`,
		}},
		// a capacity search runs the engine only
		{"generator search", "axes:\n  generator: [meshbench, fortio]\nsearch: {slo: {p99: 5ms}, from: 100, to: 1000}\n", []string{
			`p.yaml:2: axes.generator "fortio": a capacity search runs meshbench's own engine (it judges the engine's schedule lag); remove the generator or the search`,
		}},
		{"kube", "platform: kube\npss_every: 1\nreuse_topology: true\nworkers: 0\naxes:\n  mesh: [none, linkerd, consul]\n  gateway: [true, false]\n", []string{
			`p.yaml:2: pss_every "1": only on platform local (the kube platform reads the working set from metrics.k8s.io)`,
			`p.yaml:3: reuse_topology "true": allowed on platform kube: false (every cell deploys its app and deletes it)`,
			`p.yaml:4: workers "0": allowed: 1 to 1000 load generator pods`,
			`p.yaml:6: axes.mesh "consul": allowed: none, sidecar, ambient, waypoint, linkerd`,
			`p.yaml:7: axes.gateway "true": allowed on platform kube: false (no ingress gateway there yet)`,
		}},
		// body_size: out of range; with faces on the app axis
		{"body size", "body_size: 0\n", []string{`p.yaml:1: body_size "0": allowed: 1 to 67108864 bytes (the static app's answer)`}},
		{"body size faces", "axes:\n  app: [static, faces]\nbody_size: 1024\n", []string{
			`p.yaml:3: body_size "1024": applies to the static app only (faces answers what its callers ask for): drop faces from axes.app`}},
		// The substrate: a name it does not know, and one on a cluster.
		{"substrate", "substrate: docker\n", []string{
			`p.yaml:1: substrate "docker": allowed: auto, netns (network namespaces, the real ztunnel), loopback (127.0.N.x, Envoy standing in for ztunnel)`,
		}},
		{"substrate on kube", "platform: kube\nsubstrate: netns\naxes:\n  mesh: [none]\n", []string{
			`p.yaml:2: substrate "netns": only on platform local (a cluster brings its own network)`,
		}},
		// Who configures the sidecars: a name it does not know, and one on
		// a cluster.
		{"control plane", "control_plane: consul\n", []string{
			`p.yaml:1: control_plane "consul": allowed: lab (meshbench renders the sidecars' and ztunnels' configs, its stand-in serves Linkerd's proxies), istiod (the real istiod against a lab API server; netns substrate), linkerd (Linkerd's real controllers against a lab API server; netns substrate), real (each mesh from its own: istiod for Istio's modes, Linkerd's controllers for linkerd; netns substrate), auto (real for each mesh whose control plane is built here, as root on netns; else lab)`,
		}},
		{"control plane auto on kube", "platform: kube\ncontrol_plane: auto\naxes:\n  mesh: [none]\n", []string{
			`p.yaml:2: control_plane "auto": only on platform local (a cluster runs the mesh's own control plane)`,
		}},
		// auto picks each mesh's control plane when the plan starts: a
		// fault on it is refused (which cells it skips is not known yet).
		{"control plane auto with a control-plane fault", "control_plane: auto\nduration: 5s\naxes:\n  fault: [\"kill:control-plane@1s\"]\n", []string{
			`p.yaml:4: axes.fault "kill:control-plane@1s": a fault on the control plane with control_plane auto: not allowed (whether it runs depends on what auto picks); use control_plane real, or lab, which skips it`,
		}},
		{"control plane on kube", "platform: kube\ncontrol_plane: istiod\naxes:\n  mesh: [none]\n", []string{
			`p.yaml:2: control_plane "istiod": only on platform local (a cluster runs the mesh's own control plane)`,
		}},
		// Scalars out of range.
		{"scalars", `platform: kubernetes
repetitions: 0
nodes: 300
duration: 0s
warmup: -1s
drain: 2
connections: 0
sample_interval: soon
pss_every: -1
seed: 1.5
name: my plan
confidence: 1
thresholds:
  rate_shortfall: 1
  errors: -0.1
  load_cpu: NaN
`, []string{
			`p.yaml:1: platform "kubernetes": allowed: local (processes on this machine), kube (a Kubernetes cluster)`,
			`p.yaml:2: repetitions "0": allowed: a whole number from 1 to 10000`,
			`p.yaml:3: nodes 300: allowed: 1 to 250 app nodes`,
			`p.yaml:4: duration "0s": allowed: a duration above 0 such as 30s or 1m30s`,
			`p.yaml:5: warmup "-1s": allowed: a duration of 0 or more such as 0s, 2s or 500ms`,
			`p.yaml:6: drain "2": allowed: a duration of 0 or more such as 0s, 2s or 500ms`,
			`p.yaml:7: connections "0": allowed: a whole number, 1 or more`,
			`p.yaml:8: sample_interval "soon": allowed: a duration above 0 such as 30s or 1m30s`,
			`p.yaml:9: pss_every "-1": allowed: 0 (about every 5 s) or a whole number N, every N sampling rounds`,
			`p.yaml:10: seed "1.5": allowed: a whole number from -9223372036854775808 to 9223372036854775807`,
			`p.yaml:11: name "my plan": allowed: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters`,
			`p.yaml:12: confidence "1": allowed: a fraction between 0 and 1 (both excluded), such as 0.95`,
			`p.yaml:14: thresholds.rate_shortfall "1": allowed: a fraction from 0 to below 1, such as 0.002`,
			`p.yaml:15: thresholds.errors "-0.1": allowed: a fraction from 0 to 1, such as 0.01`,
			`p.yaml:16: thresholds.load_cpu "NaN": allowed: a fraction of one core above 0, at most 1, such as 0.9`,
		}},
		// A combination problem is reported once, at the axis value at
		// fault, however many cells share it: faces with 4 policies (in
		// every mesh mode, at every rate and replica count), and 90 faces
		// replicas on one node.
		{"combinations", `axes:
  mesh: [sidecar, ambient, waypoint]
  app: [static, faces]
  rate: [20, 50, 100]
  replicas: [1, 90]
  policies: [0, 4]
baseline: sidecar
`, []string{
			`p.yaml:5: axes.replicas 90: allowed: 1 to 81 on 1 app nodes (245 pod addresses per node, 3 service(s) of app faces); add nodes`,
			`p.yaml:6: axes.policies 4: no rule allows face's calls to smiley and color (default/face) to reach the app's services; use 0 or at least 5`,
		}},
		// Too few rules for the waypoint: its identity is the second rule.
		{"waypoint rules", "axes:\n  mesh: [waypoint]\n  policies: [1]\nbaseline: waypoint\n", []string{
			`p.yaml:3: axes.policies 1: no rule allows the waypoint (default/waypoint) to reach the server; use 0 or at least 2`,
		}},
		// A value no cell uses: mesh none when every policies value needs
		// a mesh; ambient with only plaintext.
		{"unused values", "axes:\n  mesh: [none, sidecar, ambient]\n  policies: [4]\n  mtls: [false, true]\nbaseline: sidecar\n", []string{
			`p.yaml:2: axes.mesh "none": no cell has it: mesh none with policies > 0: policies need a mesh mode, none runs with policies 0`,
			`p.yaml:4: axes.mtls false: no cell has it: mesh none with policies > 0: policies need a mesh mode, none runs with policies 0; mesh sidecar with mtls false and policies > 0: the rules match the peer certificate's identity, which plaintext has not; mesh ambient with mtls false: HBONE is always mTLS`,
		}},
		// Every combination skipped.
		{"no cells", "axes:\n  mesh: [ambient]\n  mtls: [false]\nbaseline: ambient\n", []string{
			`p.yaml:1: axes: the plan expands to no cells: every combination is skipped (mesh ambient with mtls false: HBONE is always mTLS)`,
		}},
		{"baseline given", "baseline: linkerd\n", []string{
			`p.yaml:1: baseline "linkerd": allowed: one of axes.mesh (none, sidecar, ambient, waypoint)`,
		}},
		// Over MaxCells.
		{"too many cells", "repetitions: 100\naxes:\n  rate: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26]\n", []string{
			`p.yaml:2: axes: expands to 10400 cells (104 configurations × 100 repetitions); allowed: at most 10000`,
		}},
		// Shapes: lists where one value goes, nulls, empty lists, nested
		// lists, a mapping for axes.
		{"shapes", `duration: [5s, 10s]
warmup:
axes:
  mesh: []
  rate: [[20]]
  replicas: {a: 1}
thresholds: 0.5
`, []string{
			`p.yaml:1: duration [...]: allowed: a single value, not a list`,
			`p.yaml:2: warmup: no value; remove the key for the default`,
			`p.yaml:4: axes.mesh []: allowed: one value or more; remove the key for the default`,
			`p.yaml:5: axes.rate [...]: allowed: a list of single values`,
			`p.yaml:6: axes.replicas {...}: allowed: a list of values such as [a, b], or one value`,
			`p.yaml:7: thresholds "0.5": allowed: a mapping of keys (rate_shortfall, errors, load_cpu)`,
		}},
		{"duplicate key", "duration: 5s\nduration: 6s\n", []string{
			`p.yaml:2: duration: given twice (first on line 1)`,
		}},
		{"not a mapping", "- a\n- b\n", []string{
			`p.yaml:1: a plan is a mapping of keys (schema, name, platform, seed, repetitions, axes, nodes, duration, warmup, drain, connections, send_tick, sample_interval, pss_every, reuse_topology, substrate, control_plane, workers, generator, baseline, compare, thresholds, confidence, search, app_concurrency, app_service_time, body_size, app_delay, app_delay_dist, app_error_ratio, app_error_status, app_stall_every, app_stall_for, app_seed, hops), not [...]`,
		}},
		// YAML syntax: the library's message and line. (yaml.v3 puts an
		// unclosed flow list at the line where the list's key began.)
		{"syntax", "duration: 5s\n warmup: 2s\n", []string{
			`p.yaml:2: mapping values are not allowed in this context`,
		}},
		{"syntax flow", "axes:\n  mesh: [none\n", []string{
			`p.yaml:1: did not find expected ',' or ']'`,
		}},
		{"two documents", "duration: 5s\n---\nduration: 6s\n", []string{
			`p.yaml:2: a plan file holds one YAML document; remove the second (---)`,
		}},
		// A huge value is echoed cut, with its length (a 50-MB name once
		// came back whole).
		{"huge value", "name: " + strings.Repeat("x", 1<<20) + "\n", []string{
			`p.yaml:1: name "` + strings.Repeat("x", 79) + `… (1048578 bytes): allowed: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error; plan %+v", p)
			}
			if p != nil {
				t.Error("a plan returned with the error")
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", err, strings.Join(tc.want, "\n"))
			}
			var pr *Problem
			if !errors.As(err, &pr) {
				t.Errorf("not a *Problem: %T", err)
			}
		})
	}
}

// TestBadPlanGolden: a plan with something wrong nearly everywhere; every
// problem is listed at once, in line order.
func TestBadPlanGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/bad-plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("bad-plan.yaml", data)
	if err == nil {
		t.Fatal("no error")
	}
	testutil.Golden(t, "bad-plan.golden", []byte(err.Error()+"\n"))
}

func TestFromFlags(t *testing.T) {
	p, err := FromFlags(Flags{Mesh: "none, sidecar", Rate: "20,50", Replicas: "1,10", Policies: "0,4", Repetitions: "2", Duration: "30s", Seed: "5"})
	if err != nil {
		t.Fatal(err)
	}
	// 2 rates × 2 replicas × (none + sidecar × 2) = 12 configurations.
	if n := len(p.Cells()); n != 12*2 {
		t.Errorf("%d cells, want 24", n)
	}
	if p.Duration.String() != "30s" || *p.Seed != 5 || p.Warmup != DefaultWarmup || len(p.Skipped()) != 2 {
		t.Errorf("plan %+v", p)
	}
	// The same plan as a file.
	q := mustParse(t, "same.yaml", "seed: 5\nrepetitions: 2\nduration: 30s\naxes:\n  mesh: [none, sidecar]\n  rate: [20, 50]\n  replicas: [1, 10]\n  policies: [0, 4]\n")
	if string(p.YAML()) != string(q.YAML()) {
		t.Errorf("flags and file differ:\n%s\n%s", p.YAML(), q.YAML())
	}
	if p, err := FromFlags(Flags{}); err != nil || string(p.YAML()) != string(Defaults().YAML()) {
		t.Errorf("no flags: %v, want the defaults", err)
	}

	for _, tc := range []struct {
		name string
		f    Flags
		want []string
	}{
		// Problems name the flag; combination problems too; flags come in
		// schema order.
		{"values", Flags{Mesh: "none,ambient,linkerd", Rate: "-5,20,,max", Policies: "4", MTLS: "true,yes", Duration: "0s", Baseline: "sidecar", LoadCPU: "2"}, []string{
			`--mesh "none": no cell has it: mesh none with policies > 0: policies need a mesh mode, none runs with policies 0`,
			`--rate "-5": allowed: positive numbers (requests per second, at most 10000000) or max`,
			`--rate "": allowed: positive numbers (requests per second, at most 10000000) or max`,
			`--mtls "yes": allowed: true or false`,
			`--duration "0s": allowed: a duration above 0 such as 30s or 1m30s`,
			`--baseline "sidecar": allowed: one of --mesh (none, ambient, linkerd)`,
			`--max-load-cpu "2": allowed: a fraction of one core above 0, at most 1, such as 0.9`,
		}},
		{"duplicates", Flags{Replicas: "1,10,1", Gateway: "true,TRUE"}, []string{
			`--replicas "1": given twice`,
			`--gateway "TRUE": given twice`,
		}},
		{"combination", Flags{App: "faces", Mesh: "none,sidecar", Policies: "0,4", Replicas: "100"}, []string{
			`--replicas 100: allowed: 1 to 81 on 1 app nodes (245 pod addresses per node, 3 service(s) of app faces); add nodes`,
			`--policies 4: no rule allows face's calls to smiley and color (default/face) to reach the app's services; use 0 or at least 5`,
		}},
		{"baseline absent", Flags{Mesh: "sidecar,ambient", Baseline: "none"}, []string{
			`--baseline "none": allowed: one of --mesh (sidecar, ambient)`,
		}},
		{"too many", Flags{Rate: "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26", Repetitions: "100"}, []string{
			`matrix: expands to 10400 cells (104 configurations × 100 repetitions); allowed: at most 10000`,
		}},
		{"platform", Flags{Platform: "kubernetes", Nodes: "0"}, []string{
			`--platform "kubernetes": allowed: local (processes on this machine), kube (a Kubernetes cluster)`,
			`--nodes 0: allowed: 1 to 250 app nodes`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromFlags(tc.f)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", err, strings.Join(tc.want, "\n"))
			}
		})
	}
}
