// Package hops attributes a request's latency to the hops of its path,
// in microseconds: every Envoy on the path logs each request it proxies
// (LogFormat: the request's id, the proxy and hop, its downstream
// duration from the first byte received to the last byte sent, and its
// upstream duration from the first byte sent upstream to the last byte
// received back, both from Envoy's %COMMON_DURATION(…:us)%); the load
// generator logs every request it sent with its id and service time
// (RequestLog). Join puts the records of one request together and
// computes, per request:
//
//   - each HTTP hop's own time: its downstream minus its upstream
//     duration (what the proxy spent itself, connection set-up included);
//   - the app's time, seen from the last proxy: that proxy's upstream
//     duration (the app plus the loopback hop to it);
//   - the untimed rest: the load's service time minus the timed hops and
//     the app. L4 hops (tcp_proxy, HBONE tunnels) have no per-request
//     timing in Envoy; their time, the kernel's and the scheduler's land
//     here, said as such, never spread over the timed hops.
//
// Each is an HDR histogram (internal/load/latency), reported at p50, p90, p95
// and p99. A request missing from some proxy's log (it failed before
// reaching it, or the log lost it) is counted per hop, not silently
// dropped; the waterfall is over the requests found at every hop.
//
// The package is pure: it reads and writes streams, it starts nothing.
package hops
