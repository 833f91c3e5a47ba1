// Package envoy finds, checks, starts, watches and stops the real Envoy
// processes of meshbench's local lab, and reads their admin endpoints.
//
//   - Find locates the Envoy binary (--envoy flag, $MESHBENCH_ENVOY, the
//     project-local .tools/envoy that `make envoy` installs, then PATH) and
//     insists on Envoy 1.40.x.
//   - Validate runs `envoy --mode validate` on a rendered config.
//   - CheckAddrsFree proves, before anything starts, that every planned
//     listener and admin address can be bound (Envoy's SO_REUSEPORT default
//     would otherwise hide a clash).
//   - Supervisor starts Envoys in their own process groups, waits for
//     /ready, notices an Envoy dying mid-run, and stops every process it
//     started, by PID.
//   - Stats and Listeners scrape the admin endpoint (/stats, /listeners).
//
// Rendering Envoy configs is not this package's job (see the bootstrap
// subpackage).
package envoy
