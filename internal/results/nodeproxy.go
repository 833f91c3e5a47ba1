package results

// SecurityMutualTLS is the connection_security_policy of connections
// secured by mutual TLS (Istio's standard metric label).
const SecurityMutualTLS = "mutual_tls"

// NodeProxyStats are one node proxy's own TCP counters over a cell:
// Istio's standard metrics (istio_tcp_*) as the proxy reports them, the
// differences between the scrape at the cell's start and at its end, so a
// proxy kept up across cells counts only this cell's traffic.
type NodeProxyStats struct {
	// ConnectionsOpened and ConnectionsClosed are TCP connections the
	// proxy carried, summed over its reporters (source: the client pod's
	// side, destination: the server pod's side).
	ConnectionsOpened uint64 `json:"connections_opened"`
	ConnectionsClosed uint64 `json:"connections_closed"`
	// BytesSent and BytesReceived are the proxied bytes.
	BytesSent     uint64 `json:"bytes_sent"`
	BytesReceived uint64 `json:"bytes_received"`
	// OpenedBySecurity counts the opened connections by
	// connection_security_policy ("mutual_tls", "unknown", …).
	OpenedBySecurity map[string]uint64 `json:"connections_opened_by_security_policy,omitempty"`
	// OpenedByReporter counts them by reporter ("source", "destination").
	OpenedByReporter map[string]uint64 `json:"connections_opened_by_reporter,omitempty"`
}

// MTLSOpened is how many opened connections were mutual TLS; Plaintext how
// many were not.
func (s NodeProxyStats) MTLSOpened() uint64 { return s.OpenedBySecurity[SecurityMutualTLS] }

// PlaintextOpened is how many opened connections were not mutual TLS.
func (s NodeProxyStats) PlaintextOpened() uint64 { return s.ConnectionsOpened - s.MTLSOpened() }
