package ztunnel

import (
	"fmt"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meshbench/meshbench/internal/results"
)

// The istio_tcp_* counters ztunnel reports (OpenMetrics: the samples end in
// _total).
const (
	metricOpened   = "istio_tcp_connections_opened_total"
	metricClosed   = "istio_tcp_connections_closed_total"
	metricSent     = "istio_tcp_sent_bytes_total"
	metricReceived = "istio_tcp_received_bytes_total"
)

// Series is one counter of ztunnel's by the labels the cell's stats keep.
type Series struct {
	Metric   string // e.g. istio_tcp_connections_opened_total
	Reporter string // source or destination
	Security string // connection_security_policy: mutual_tls, unknown…
}

// Counters are ztunnel's TCP counters from one scrape, summed by Series.
type Counters map[Series]float64

// ParseMetrics reads the istio_tcp_* counters of a scrape of ztunnel's
// stats port (its OpenMetrics text, which the Prometheus text parser reads
// with the _total samples as untyped series).
func ParseMetrics(text string) (Counters, error) {
	// The OpenMetrics end marker is a comment to the text parser.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("reading ztunnel's metrics: %w", err)
	}
	out := Counters{}
	for _, name := range []string{metricOpened, metricClosed, metricSent, metricReceived} {
		for _, m := range fams[name].GetMetric() {
			k := Series{Metric: name}
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "reporter":
					k.Reporter = lp.GetValue()
				case "connection_security_policy":
					k.Security = lp.GetValue()
				}
			}
			out[k] += m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return out, nil
}

// Sub returns c − base per series: what happened between two scrapes of
// one process. A series absent from base counts from 0; a counter that went
// down (the process restarted) counts from 0 too.
func (c Counters) Sub(base Counters) Counters {
	out := Counters{}
	for k, v := range c {
		if b := base[k]; v >= b {
			out[k] = v - b
		} else {
			out[k] = v
		}
	}
	return out
}

// Stats sums the counters into the cell's node proxy stats.
func (c Counters) Stats() results.NodeProxyStats {
	s := results.NodeProxyStats{OpenedBySecurity: map[string]uint64{}, OpenedByReporter: map[string]uint64{}}
	for k, v := range c {
		n := uint64(v)
		switch k.Metric {
		case metricOpened:
			s.ConnectionsOpened += n
			if n > 0 {
				s.OpenedBySecurity[k.Security] += n
				s.OpenedByReporter[k.Reporter] += n
			}
		case metricClosed:
			s.ConnectionsClosed += n
		case metricSent:
			s.BytesSent += n
		case metricReceived:
			s.BytesReceived += n
		}
	}
	if len(s.OpenedBySecurity) == 0 {
		s.OpenedBySecurity, s.OpenedByReporter = nil, nil
	}
	return s
}
