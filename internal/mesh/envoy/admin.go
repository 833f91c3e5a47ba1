package envoy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxAdminBody bounds one admin response read by this package (64 MiB; a
// waypoint's /stats?format=json is well under 1 MiB).
const maxAdminBody = 64 << 20

// adminClient talks to Envoy admin endpoints on loopback only: no proxy
// from the environment, short connect timeout, a few idle connections kept.
// An admin address registered with AdminIn is dialled inside its
// namespace.
var adminClient = &http.Client{
	Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         dialAdmin,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	},
}

// adminNS maps an admin address to the namespace it lives in (AdminIn).
var adminNS sync.Map // string (ip:port) → func(func() error) error

// AdminIn says that the Envoy admin at addr (a loopback ip:port) listens
// inside a network namespace, entered by in (netns.NS.Do): every admin
// call to addr is dialled there. Loopback addresses are private to each
// namespace, so the address still names one Envoy as long as the lab
// gives each its own. ForgetAdmin undoes it.
func AdminIn(addr string, in func(func() error) error) { adminNS.Store(addr, in) }

// ForgetAdmin drops addr's namespace (its Envoy stopped).
func ForgetAdmin(addr string) { adminNS.Delete(addr) }

// dialAdmin dials addr, inside its namespace when AdminIn named one.
func dialAdmin(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	v, ok := adminNS.Load(addr)
	if !ok {
		return d.DialContext(ctx, network, addr)
	}
	var c net.Conn
	err := v.(func(func() error) error)(func() (err error) {
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// adminGet fetches http://ADMIN/path and returns the body of a 200 answer.
func adminGet(ctx context.Context, adminAddr, path string) ([]byte, error) {
	return adminDo(ctx, http.MethodGet, adminAddr, path)
}

// adminDo sends method http://ADMIN/path and returns the body of a 200
// answer (Envoy wants POST for what changes its state).
func adminDo(ctx context.Context, method, adminAddr, path string) ([]byte, error) {
	ap, err := checkLoopbackAddr("envoy admin address", adminAddr)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+ap.String()+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("envoy admin %s: %w", adminAddr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminBody+1))
	if err != nil {
		return nil, fmt.Errorf("envoy admin %s%s: reading answer: %w", adminAddr, path, err)
	}
	if len(body) > maxAdminBody {
		return nil, fmt.Errorf("envoy admin %s%s: answer larger than %d bytes", adminAddr, path, maxAdminBody)
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("envoy admin %s%s: %s: %s", adminAddr, path, resp.Status, oneLine(string(body), 200))
	}
	return body, nil
}

// StatsSnapshot is one scrape of an Envoy's /stats. Store Raw in results:
// the maps are a parsed view of it (Histograms hold NaN, which JSON cannot
// carry).
type StatsSnapshot struct {
	// Counters maps a counter's name (e.g. "http.in.downstream_rq_2xx") to
	// its value since the Envoy started.
	Counters map[string]uint64
	// Gauges maps a gauge's name (e.g. "server.memory_allocated", bytes) to
	// its current value.
	Gauges map[string]uint64
	// TextReadouts maps a text readout's name to its value.
	TextReadouts map[string]string
	// Histograms maps a histogram's name (e.g. "http.in.downstream_rq_time",
	// ms) to the quantiles Envoy computed at its last stats flush (every
	// stats_flush_interval, 5 s by default).
	Histograms map[string]Histogram
	// Raw is the body of GET /stats?format=json, byte for byte; the values
	// in the maps come from it.
	Raw []byte
}

// Histogram is what Envoy's /stats?format=json reports for one histogram.
type Histogram struct {
	// Quantiles are the supported quantiles, in percent (0–100), e.g.
	// 0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 100.
	Quantiles []float64
	// Interval holds, per quantile, the value over the last flush interval
	// in the histogram's unit (its name says: _ms, _bytes, …; rq_time is
	// ms); NaN where Envoy reported null (no sample in the interval).
	Interval []float64
	// Cumulative holds, per quantile, the value since the Envoy started;
	// NaN where Envoy reported null (no sample yet).
	Cumulative []float64
}

// CumulativeAt returns the cumulative value at percent (e.g. 99) and
// whether Envoy reported one.
func (h Histogram) CumulativeAt(percent float64) (float64, bool) {
	for i, q := range h.Quantiles {
		if q == percent && i < len(h.Cumulative) && !math.IsNaN(h.Cumulative[i]) {
			return h.Cumulative[i], true
		}
	}
	return 0, false
}

// IntervalAt returns the value at percent over the last flush interval
// and whether Envoy reported one.
func (h Histogram) IntervalAt(percent float64) (float64, bool) {
	for i, q := range h.Quantiles {
		if q == percent && i < len(h.Interval) && !math.IsNaN(h.Interval[i]) {
			return h.Interval[i], true
		}
	}
	return 0, false
}

// Counter returns a counter's value and whether the snapshot has it.
func (s *StatsSnapshot) Counter(name string) (uint64, bool) {
	v, ok := s.Counters[name]
	return v, ok
}

// Gauge returns a gauge's value and whether the snapshot has it.
func (s *StatsSnapshot) Gauge(name string) (uint64, bool) {
	v, ok := s.Gauges[name]
	return v, ok
}

// SumCounters adds up every counter whose name starts with prefix and ends
// with suffix (either may be empty), e.g. SumCounters("http.",
// ".downstream_rq_completed"). Overflow wraps, as uint64 does; Envoy's
// counters are far from it.
func (s *StatsSnapshot) SumCounters(prefix, suffix string) uint64 {
	var sum uint64
	for name, v := range s.Counters {
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix) {
			sum += v
		}
	}
	return sum
}

// FlushStats asks the Envoy at adminAddr to flush its stats, which also
// merges its histograms, by a /stats request that matches no stat. With
// stats_flush_on_admin (meshbench's configs) histogram quantiles are only
// computed at such a flush, and the merge completes after the answer is
// sent: call this, give it a moment, then Stats.
func FlushStats(ctx context.Context, adminAddr string) error {
	_, err := adminGet(ctx, adminAddr, "/stats?filter=%5E%24") // ^$
	return err
}

// StartInterval makes what Stats reports next cover only what happens from
// now on: it resets every counter to zero (POST /reset_counters) and
// flushes, which starts a new histogram interval. Envoy's reset leaves the
// cumulative histograms alone (checked on Envoy 1.40: `totals` keep their
// samples, `intervals` empty), which is why Summarize reads the interval
// quantiles. Gauges are current values and need no reset.
func StartInterval(ctx context.Context, adminAddr string) error {
	if _, err := adminDo(ctx, http.MethodPost, adminAddr, "/reset_counters"); err != nil {
		return err
	}
	return FlushStats(ctx, adminAddr)
}

// Stats scrapes GET /stats?format=json from the admin address (loopback
// ip:port) and parses it. Counters and gauges share one list in Envoy's
// JSON, so two more small requests (type=Counters, type=Gauges) tell them
// apart; all values come from the first answer, which Raw keeps. A stat
// that disappears between the requests is left out of both maps.
func Stats(ctx context.Context, adminAddr string) (*StatsSnapshot, error) {
	raw, err := adminGet(ctx, adminAddr, "/stats?format=json")
	if err != nil {
		return nil, err
	}
	snap, err := parseStats(raw)
	if err != nil {
		return nil, fmt.Errorf("envoy admin %s/stats: %w", adminAddr, err)
	}
	var kinds [2]map[string]bool
	for i, typ := range []string{"Counters", "Gauges"} {
		body, err := adminGet(ctx, adminAddr, "/stats?format=json&type="+typ)
		if err != nil {
			return nil, err
		}
		names, err := statNames(body)
		if err != nil {
			return nil, fmt.Errorf("envoy admin %s/stats type=%s: %w", adminAddr, typ, err)
		}
		kinds[i] = names
	}
	snap.classify(kinds[0], kinds[1])
	return snap, nil
}

// statsDoc is the shape of /stats?format=json: a list whose entries are
// either {"name", "value"} (value a number, or a string for text readouts)
// or {"histograms": {...}}.
type statsDoc struct {
	Stats []struct {
		Name       string          `json:"name"`
		Value      json.RawMessage `json:"value"`
		Histograms *struct {
			SupportedQuantiles []float64 `json:"supported_quantiles"`
			ComputedQuantiles  []struct {
				Name   string `json:"name"`
				Values []struct {
					Interval   *float64 `json:"interval"`
					Cumulative *float64 `json:"cumulative"`
				} `json:"values"`
			} `json:"computed_quantiles"`
		} `json:"histograms"`
	} `json:"stats"`
}

// parseStats reads every stat of a /stats?format=json body. Numeric stats
// land in Gauges until classify is called with the counter names.
func parseStats(raw []byte) (*StatsSnapshot, error) {
	var doc statsDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not the JSON Envoy writes: %w", err)
	}
	snap := &StatsSnapshot{
		Counters:     map[string]uint64{},
		Gauges:       map[string]uint64{},
		TextReadouts: map[string]string{},
		Histograms:   map[string]Histogram{},
		Raw:          raw,
	}
	for _, st := range doc.Stats {
		if st.Histograms != nil {
			for _, cq := range st.Histograms.ComputedQuantiles {
				h := Histogram{
					Quantiles:  st.Histograms.SupportedQuantiles,
					Interval:   make([]float64, len(cq.Values)),
					Cumulative: make([]float64, len(cq.Values)),
				}
				for i, v := range cq.Values {
					h.Interval[i], h.Cumulative[i] = orNaN(v.Interval), orNaN(v.Cumulative)
				}
				snap.Histograms[cq.Name] = h
			}
			continue
		}
		if st.Name == "" || len(st.Value) == 0 {
			continue
		}
		v := bytes.TrimSpace(st.Value)
		if len(v) > 0 && v[0] == '"' {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("stat %s: %w", st.Name, err)
			}
			snap.TextReadouts[st.Name] = s
			continue
		}
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("stat %s: value %s is not an unsigned integer", st.Name, v)
		}
		snap.Gauges[st.Name] = n // sorted out by classify
	}
	return snap, nil
}

// classify moves the numeric stats (parked in Gauges by parseStats) into
// Counters or Gauges by name; a name in neither list is dropped.
func (s *StatsSnapshot) classify(counters, gauges map[string]bool) {
	all := s.Gauges
	s.Gauges = make(map[string]uint64, len(gauges))
	for name, v := range all {
		switch {
		case counters[name]:
			s.Counters[name] = v
		case gauges[name]:
			s.Gauges[name] = v
		}
	}
}

// statNames returns the names in a /stats?format=json&type=… body.
func statNames(raw []byte) (map[string]bool, error) {
	var doc struct {
		Stats []struct {
			Name string `json:"name"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not the JSON Envoy writes: %w", err)
	}
	names := make(map[string]bool, len(doc.Stats))
	for _, st := range doc.Stats {
		if st.Name != "" {
			names[st.Name] = true
		}
	}
	return names, nil
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// Listener is one listener an Envoy reports on /listeners.
type Listener struct {
	// Name is the listener's name in the config.
	Name string
	// Addrs are the addresses it is bound to: "ip:port" for sockets (the
	// port Envoy actually bound), "internal:NAME" for internal listeners,
	// "pipe:PATH" for unix sockets. The main address comes first.
	Addrs []string
}

// LoopbackOnly reports whether every socket address of the listener is on
// loopback (internal listeners and pipes bind no network address and
// pass).
func (l Listener) LoopbackOnly() bool {
	for _, a := range l.Addrs {
		if strings.HasPrefix(a, "internal:") || strings.HasPrefix(a, "pipe:") {
			continue
		}
		ap, err := netip.ParseAddrPort(a)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			return false
		}
	}
	return true
}

// Listeners reads GET /listeners?format=json from the admin address
// (loopback ip:port): every active listener with the addresses it is bound
// to, in Envoy's order.
func Listeners(ctx context.Context, adminAddr string) ([]Listener, error) {
	raw, err := adminGet(ctx, adminAddr, "/listeners?format=json")
	if err != nil {
		return nil, err
	}
	ls, err := parseListeners(raw)
	if err != nil {
		return nil, fmt.Errorf("envoy admin %s/listeners: %w", adminAddr, err)
	}
	return ls, nil
}

// envoyAddress is Envoy's config.core.v3.Address as /listeners prints it.
type envoyAddress struct {
	SocketAddress *struct {
		Address   string `json:"address"`
		PortValue uint32 `json:"port_value"`
	} `json:"socket_address"`
	Pipe *struct {
		Path string `json:"path"`
	} `json:"pipe"`
	EnvoyInternalAddress *struct {
		ServerListenerName string `json:"server_listener_name"`
	} `json:"envoy_internal_address"`
}

func (a envoyAddress) String() string {
	switch {
	case a.SocketAddress != nil:
		ip, err := netip.ParseAddr(a.SocketAddress.Address)
		if err != nil {
			return net.JoinHostPort(a.SocketAddress.Address, strconv.Itoa(int(a.SocketAddress.PortValue)))
		}
		return netip.AddrPortFrom(ip, uint16(a.SocketAddress.PortValue)).String()
	case a.Pipe != nil:
		return "pipe:" + a.Pipe.Path
	case a.EnvoyInternalAddress != nil:
		return "internal:" + a.EnvoyInternalAddress.ServerListenerName
	}
	return "unknown"
}

func parseListeners(raw []byte) ([]Listener, error) {
	var doc struct {
		ListenerStatuses []struct {
			Name                     string         `json:"name"`
			LocalAddress             envoyAddress   `json:"local_address"`
			AdditionalLocalAddresses []envoyAddress `json:"additional_local_addresses"`
		} `json:"listener_statuses"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not the JSON Envoy writes: %w", err)
	}
	out := make([]Listener, 0, len(doc.ListenerStatuses))
	for _, ls := range doc.ListenerStatuses {
		l := Listener{Name: ls.Name, Addrs: []string{ls.LocalAddress.String()}}
		for _, a := range ls.AdditionalLocalAddresses {
			l.Addrs = append(l.Addrs, a.String())
		}
		out = append(out, l)
	}
	return out, nil
}

// AdminStatsSchema is the version of the envoy/NAME.stats.json files of a
// results directory: Envoy's /stats?format=json body (Raw) with this
// version added as its first key, "schema". Files written before the key
// existed lack it and are otherwise the same.
const AdminStatsSchema = "meshbench.envoy-admin-stats/v1"

// Versioned is Raw with "schema": AdminStatsSchema added as the object's
// first key, every other byte as Envoy wrote it; a body that is not a JSON
// object (never seen from Envoy) is returned unchanged.
func (s *StatsSnapshot) Versioned() []byte {
	raw := bytes.TrimLeft(s.Raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' {
		return s.Raw
	}
	rest := bytes.TrimLeft(raw[1:], " \t\r\n")
	out := make([]byte, 0, len(raw)+64)
	out = append(out, `{"schema":"`+AdminStatsSchema+`"`...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
