// Package plan reads benchmark plans: a YAML file, or the same axes given
// as `meshbench bench` flags, checked all at once and expanded into cells.
// A cell is one run of the local lab (local.Options) or, with platform
// kube, of a Kubernetes cluster (kube.Options): one combination of axis
// values and one repetition.
//
// # The plan file
//
// Every key is optional; a key the schema does not know is an error (a
// typo must not silently fall back to a default). Each axis takes a list,
// or one value as shorthand for a list of one. The defaults:
//
//	name: ""                 # a label, [A-Za-z0-9._-], at most 64 characters
//	platform: local          # local (processes on this machine) or kube (a cluster; see below)
//	seed:                    # int64; absent: the runner picks one and records it
//	repetitions: 3           # runs of every configuration, at least 1
//	axes:
//	  mesh: [none, sidecar, ambient, waypoint]
//	  app: [static]          # static, faces
//	  rate: [100]            # requests per second (positive numbers), or max (closed loop)
//	  replicas: [1]          # pods of every app service
//	  policies: [0]          # L4 ALLOW rules, 0 to 1000
//	  protocol: [http]       # http, tcp
//	  gateway: [false]       # load through an ingress gateway
//	  mtls: [true]           # false: plaintext sidecars
//	nodes: 1                 # app nodes, 1 to 250
//	duration: 10s            # measured window, above 0
//	warmup: 2s               # load before the window, not counted
//	drain: 2s                # sampling after the load
//	connections: 16          # load generator connections, at least 1
//	send_tick: 0             # open loop, meshbench's engine: wake at most once per tick (100us to 10ms) and send what is due; 0: each request at its own time
//	sample_interval: 1s      # /proc sampling period, above 0
//	pss_every: 0             # read PSS every N sampling rounds; 0: about every 5 s
//	substrate: auto          # netns (namespaces, the real ztunnel), loopback (Envoy stands in for ztunnel), auto
//	control_plane: lab       # who configures the lab's proxies: lab (hand-rendered, stand-in), istiod (sidecars, ztunnels), linkerd (the real ones; netns), real (each mesh its own)
//	reuse_topology: true     # within a round, run a topology's cells on one running lab
//	baseline: none           # the mesh others are compared with; must be in axes.mesh
//	thresholds:
//	  rate_shortfall: 0.002  # a run sending less than 1-this of its schedule is invalid
//	  errors: 0.01           # a run with more than this fraction of failed requests is invalid
//	  load_cpu: 0.9          # the load generator is CPU-starved above this fraction of one core
//	confidence: 0.95         # of the intervals the comparisons report
//	body_size: 615           # the static app's answer in bytes
//
// Local only, absent by default (the lab's own apps and Envoys):
//
//	app_delay: 2ms           # every app replica waits this long before each answer (serve --delay)
//	app_delay_dist: exp:1ms  # plus a random delay: uniform:MIN,MAX, exp:MEAN, normal:MEAN,STDDEV
//	app_error_ratio: 0.01    # fraction of requests answered with an injected error
//	app_error_status: 503    # its HTTP status (static apps)
//	app_stall_every: 2s      # whole-app stalls: the period…
//	app_stall_for: 100ms     # …and their length
//	app_seed: 7              # seed of the random delays and errors
//	hops: true               # time every hop (Envoy access logs, µs): waterfalls per mesh
//
// A null value ("duration:" with nothing after it) is an error, not the
// default: remove the key to get the default.
//
// # Platform kube
//
// The same plan runs on a Kubernetes cluster (`meshbench bench
// --kubeconfig …`; the cluster is not part of the plan). There the mesh
// axis takes linkerd too, and:
//
//	workers: 1               # load generator pods per cell (kube only), 1 to 1000
//	generator: meshbench     # meshbench, oha or wrk2 (kube only: `meshbench load --generator`)
//	sample_interval: 10s     # the metrics.k8s.io polling period
//	drain: 60s               # at most (ends once the app is idle again); 3 sample intervals if longer
//	reuse_topology: false    # every cell deploys its app and deletes it
//
// pss_every is local only (a cluster gives the working set), and gateway
// true is not available on kube yet. Linkerd with mtls false is skipped:
// its mTLS between meshed pods is always on.
//
// # Problems
//
// Parse and FromFlags report every problem at once (errors.Join of
// *Problem), one line each: "FILE:LINE: FIELD VALUE: what is allowed"
// for a file, "--FLAG VALUE: what is allowed" for flags. A combination of
// axis values is checked with topology.Options.Validate, and a problem found
// in many combinations is reported once, at the line of the axis value
// that causes it.
//
// # Skipped combinations
//
// Some combinations are not cells: listed by Skipped with the reason, not
// errors, because a matrix naturally contains them.
//
//   - mesh none with policies > 0: policies need a mesh. The seed matrix
//     crosses [none, sidecar, ambient] with [0, 4] policies; none runs once,
//     with 0.
//   - ambient or waypoint with mtls false: HBONE is always mTLS.
//   - sidecar with mtls false and policies > 0: the rules match the peer
//     certificate's identity, which plaintext has not.
//   - mesh none with mtls false when the mtls axis also holds true: mode
//     none ignores mtls, so it would be the same run twice.
//   - mesh none without a gateway with protocol tcp when the protocol axis
//     also holds http: no proxy means nothing treats the traffic as tcp.
//
// An axis value that no cell uses (mesh none when every policies value is
// above 0, say) is an error, and so is a plan with no cells or more than
// MaxCells.
//
// # Cells and their order
//
// Cell IDs name every axis value (see Cell.ID). Order runs the cells in a
// seeded random order in rounds, one per repetition, so that drift over
// the hours of a plan (thermal, a noisy neighbour, the page cache) falls
// on every configuration alike instead of masquerading as a difference
// between meshes; with topology reuse (the default), the cells of a round
// that share a topology run back to back on one lab (see Plan.Order).
package plan
