package hops

// The keys of a hop record: the JSON object every proxy writes per
// request (LogFormat) and ParseLog reads.
const (
	KeyRequestID    = "request_id"    // the request's X-Request-Id
	KeyProxy        = "proxy"         // the proxy's name, e.g. "client-sidecar"
	KeyHop          = "hop"           // the hop's label, e.g. "client sidecar outbound"
	KeyService      = "service"       // the service the request is for, when the listener knows it
	KeyCluster      = "cluster"       // the upstream cluster (names the service where Service is not set)
	KeyDownstreamUs = "downstream_us" // first byte received downstream → last byte sent downstream, µs
	KeyUpstreamUs   = "upstream_us"   // first byte sent upstream → last byte received from upstream, µs
	KeyStatus       = "status"        // the HTTP status sent downstream (0: none)
	KeyFlags        = "flags"         // Envoy's response flags ("-": none)
	KeyAttempts     = "attempts"      // upstream attempts (retries + 1)
	KeyStart        = "start"         // when the request started, RFC 3339
)

// Hop names one HTTP hop: where a proxy handles requests per request.
type Hop struct {
	Proxy   string // the proxy's name
	Label   string // the hop's label in reports
	Service string // the request's service, "" when the cluster names it
}

// LogFormat is Envoy's json_format for hop h's records: static strings
// for the hop, command operators for the rest. Every duration is
// Envoy's own, in µs (%COMMON_DURATION(START:END:us)%, Envoy ≥ 1.33);
// a time point that never came (no upstream) logs null.
func LogFormat(h Hop) map[string]string {
	f := map[string]string{
		KeyRequestID:    "%REQ(X-REQUEST-ID)%",
		KeyProxy:        h.Proxy,
		KeyHop:          h.Label,
		KeyCluster:      "%UPSTREAM_CLUSTER%",
		KeyDownstreamUs: "%COMMON_DURATION(DS_RX_BEG:DS_TX_END:us)%",
		KeyUpstreamUs:   "%COMMON_DURATION(US_TX_BEG:US_RX_END:us)%",
		KeyStatus:       "%RESPONSE_CODE%",
		KeyFlags:        "%RESPONSE_FLAGS%",
		KeyAttempts:     "%UPSTREAM_REQUEST_ATTEMPT_COUNT%",
		KeyStart:        "%START_TIME%",
	}
	if h.Service != "" {
		f[KeyService] = h.Service
	}
	return f
}
