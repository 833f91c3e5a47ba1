package istio

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// ProxySync is istiod's record of one connected proxy: for each xDS type
// it sent, whether the proxy ACKed the last push, and the last NACK's
// error (from istiod's syncz, as `istioctl x internal-debug syncz` gives it).
type ProxySync struct {
	Proxy   string          `json:"proxy"`
	Type    string          `json:"proxy_type"`
	Version string          `json:"istio_version"`
	Types   map[string]Sync `json:"types"` // CDS, LDS, RDS, EDS, ECDS, WDS, …
}

// Sync is one xDS type's state for a proxy.
type Sync struct {
	Sent, Acked string
	// Error is the proxy's last NACK (empty: none).
	Error string
}

// ACKed reports whether the proxy ACKed the last push of this type.
func (s Sync) ACKed() bool { return s.Sent != "" && s.Sent == s.Acked && s.Error == "" }

// typeNames are xDS type URLs' usual short names.
var typeNames = map[string]string{
	"type.googleapis.com/envoy.config.cluster.v3.Cluster":                  "CDS",
	"type.googleapis.com/envoy.config.listener.v3.Listener":                "LDS",
	"type.googleapis.com/envoy.config.route.v3.RouteConfiguration":         "RDS",
	"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment":   "EDS",
	"type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig":        "ECDS",
	"type.googleapis.com/istio.workload.Address":                           "WDS",
	"type.googleapis.com/istio.security.Authorization":                     "WDS-authz",
	"type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret": "SDS",
}

// ParseSyncz reads istiod's syncz JSON: one ProxySync per proxy with a
// cluster ID (the entry without one is the debug client asking).
func ParseSyncz(data []byte) ([]ProxySync, error) {
	var raw []struct {
		ClusterID string `json:"cluster_id"`
		Proxy     string `json:"proxy"`
		ProxyType string `json:"proxy_type"`
		Version   string `json:"istio_version"`
		Resources map[string]struct {
			Sent      string `json:"sent"`
			Acked     string `json:"acked"`
			LastError string `json:"lastError"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("istiod's syncz: %w", err)
	}
	var out []ProxySync
	for _, r := range raw {
		if r.ClusterID == "" {
			continue
		}
		p := ProxySync{Proxy: r.Proxy, Type: r.ProxyType, Version: r.Version, Types: map[string]Sync{}}
		for url, st := range r.Resources {
			n := typeNames[url]
			if n == "" {
				n = url[strings.LastIndex(url, "/")+1:]
			}
			p.Types[n] = Sync{Sent: st.Sent, Acked: st.Acked, Error: st.LastError}
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b ProxySync) int { return strings.Compare(a.Proxy, b.Proxy) })
	return out, nil
}

// SyncStatus asks istiod (through the build's istioctl, over xDS) for
// every proxy's sync state.
func SyncStatus(ctx context.Context, b Build, kubeconfig, kubecontext string) ([]ProxySync, error) {
	args := []string{"x", "internal-debug", "syncz"}
	if kubeconfig != "" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	if kubecontext != "" {
		args = append(args, "--context", kubecontext)
	}
	cmd := exec.CommandContext(ctx, b.Path("istioctl"), args...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("istioctl %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return ParseSyncz(out)
}

// NotACKed lists "proxy TYPE: why" for every type a proxy has not ACKed.
func NotACKed(ps []ProxySync) []string {
	var bad []string
	for _, p := range ps {
		for _, t := range sortedTypes(p) {
			if s := p.Types[t]; !s.ACKed() {
				why := "pending"
				if s.Error != "" {
					why = "NACK: " + s.Error
				}
				bad = append(bad, p.Proxy+" "+t+": "+why)
			}
		}
	}
	return bad
}

func sortedTypes(p ProxySync) []string {
	var ts []string
	for t := range p.Types {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// SyncRow is one proxy as istiod sees it: its name, type and Istio version,
// and for each xDS type (CDS, LDS, …) its state: ACK (the last push
// ACKed), NACK or pending. report.SyncTable prints them.
type SyncRow struct {
	Proxy, Type, Version string
	States               map[string]string
}

// SyncRows are ps as the rows of report.SyncTable: each proxy's type,
// version, and for each xDS type ACK (the last push ACKed), NACK or
// pending.
func SyncRows(ps []ProxySync) []SyncRow {
	rows := make([]SyncRow, 0, len(ps))
	for _, p := range ps {
		r := SyncRow{Proxy: p.Proxy, Type: p.Type, Version: p.Version, States: map[string]string{}}
		for t, s := range p.Types {
			switch {
			case s.ACKed():
				r.States[t] = "ACK"
			case s.Error != "":
				r.States[t] = "NACK"
			default:
				r.States[t] = "pending"
			}
		}
		rows = append(rows, r)
	}
	return rows
}
