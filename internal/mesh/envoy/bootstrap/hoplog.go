package bootstrap

import (
	"fmt"
	"path/filepath"
	"strings"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	fileaccesslogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

const nameFileAccessLog = "envoy.access_loggers.file"

// HopLogPath is where proxy writes its hop records in dir.
func HopLogPath(dir, proxy string) string { return filepath.Join(dir, proxy+".hops.jsonl") }

// RenderHopLogs is Render with hop timing on (AddHopLogs): every proxy's
// per-request records go to HopLogPath(dir, name). It returns the
// configs and every hop that logs.
func RenderHopLogs(topo *topology.Topology, certs CertPaths, dir string) (map[string][]byte, []hops.Hop, error) {
	bs, err := Build(topo, certs)
	if err != nil {
		return nil, nil, err
	}
	var all []hops.Hop
	out := make(map[string][]byte, len(bs))
	for i := range topo.Proxies {
		p := &topo.Proxies[i]
		hs, err := AddHopLogs(bs[p.Name], topo, p, HopLogPath(dir, p.Name))
		if err != nil {
			return nil, nil, fmt.Errorf("hop log of %s: %w", p.Name, err)
		}
		all = append(all, hs...)
		if out[p.Name], err = Marshal(bs[p.Name]); err != nil {
			return nil, nil, fmt.Errorf("rendering %s: %w", p.Name, err)
		}
	}
	return out, all, nil
}

// AddHopLogs adds a JSON access log (hops.LogFormat) writing to path to
// every HTTP connection manager of proxy p's bootstrap b that handles
// requests one by one: sidecars' outbound and inbound, the waypoint's
// main_internal, the gateway. CONNECT-terminating managers (HBONE) and
// tcp_proxy filters carry tunnels or connections, not requests: they get
// none and are the untimed L4 hops. Each manager also keeps the request
// id it is given (preserve_external_request_id), so one id follows a
// request along the path. It returns the hops that log.
func AddHopLogs(b *bootstrapv3.Bootstrap, topo *topology.Topology, p *topology.Proxy, path string) ([]hops.Hop, error) {
	var out []hops.Hop
	for _, l := range b.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				if f.GetName() != nameHCM {
					continue
				}
				h := &hcmv3.HttpConnectionManager{}
				if err := f.GetTypedConfig().UnmarshalTo(h); err != nil {
					return nil, fmt.Errorf("listener %s: %w", l.GetName(), err)
				}
				if terminatesConnect(h) {
					continue
				}
				hop, ok := hopOf(topo, p, l.GetName())
				if !ok {
					return nil, fmt.Errorf("listener %s: no hop label for an HTTP connection manager there", l.GetName())
				}
				al, err := hopAccessLog(hop, path)
				if err != nil {
					return nil, err
				}
				h.AccessLog = append(h.AccessLog, al)
				h.PreserveExternalRequestId = true
				f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: typed(h)}
				out = append(out, hop)
			}
		}
	}
	return out, nil
}

// terminatesConnect says whether h terminates HBONE: HTTP/2 CONNECT
// streams, each a tunnelled connection (connectHCM).
func terminatesConnect(h *hcmv3.HttpConnectionManager) bool {
	if !h.GetHttp2ProtocolOptions().GetAllowConnect() {
		return false
	}
	for _, u := range h.GetUpgradeConfigs() {
		if strings.EqualFold(u.GetUpgradeType(), "CONNECT") {
			return true
		}
	}
	return false
}

// hopOf labels the requests p's listener named name handles.
func hopOf(topo *topology.Topology, p *topology.Proxy, name string) (hops.Hop, bool) {
	for _, l := range p.Listeners {
		if l.Name != name {
			continue
		}
		switch l.Kind {
		case topology.ListenerOutbound:
			return hops.Hop{Proxy: p.Name, Label: p.Component + " outbound", Service: l.Service}, true
		case topology.ListenerInbound:
			svc := ""
			if pod := topo.Pod(p.Pod); pod != nil {
				svc = pod.Service
			}
			return hops.Hop{Proxy: p.Name, Label: p.Component + " inbound", Service: svc}, true
		case topology.ListenerGateway:
			return hops.Hop{Proxy: p.Name, Label: p.Component, Service: topo.Service.Name}, true
		}
	}
	if p.Role == topology.RoleWaypoint {
		for _, svc := range topo.Services {
			if name == mainInternal+svc.Suffix {
				return hops.Hop{Proxy: p.Name, Label: p.Component, Service: svc.Name}, true
			}
		}
	}
	return hops.Hop{}, false
}

func hopAccessLog(h hops.Hop, path string) (*accesslogv3.AccessLog, error) {
	fields := map[string]any{}
	for k, v := range hops.LogFormat(h) {
		fields[k] = v
	}
	st, err := structpb.NewStruct(fields)
	if err != nil {
		return nil, err
	}
	fal := &fileaccesslogv3.FileAccessLog{Path: path, AccessLogFormat: &fileaccesslogv3.FileAccessLog_LogFormat{
		LogFormat: &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: st}}}}
	return &accesslogv3.AccessLog{Name: nameFileAccessLog, ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed(fal)}}, nil
}
