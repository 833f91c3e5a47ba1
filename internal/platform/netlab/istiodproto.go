package netlab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/local"
)

// registryService is a service as istiod's registry holds it (its
// /debug/registryz): the ports with the protocol istiod read from their
// names.
type registryService struct {
	Hostname string `json:"hostname"`
	Ports    []struct {
		Name     string `json:"name"`
		Port     int    `json:"port"`
		Protocol string `json:"protocol"`
	} `json:"ports"`
}

// Registry is istiod's service registry (its /debug/registryz).
func (d *Istiod) Registry(ctx context.Context) ([]registryService, error) {
	hc := d.lab.fabric.HTTPClient(5*time.Second, false)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(istiodMonPort)+"/debug/registryz", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("istiod's registryz: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("istiod's registryz: %s", resp.Status)
	}
	var out []registryService
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("istiod's registryz: %w", err)
	}
	return out, nil
}

// checkProtocol says which protocol istiod holds for the entry service's
// port, as it read the port's name (http, or tcp-http with protocol
// tcp), and makes the cell invalid when it is not the cell's.
func (in *istiodNet) checkProtocol(ctx context.Context, t *topology.Topology, mc *local.MeshCheck) error {
	reg, err := in.d.Registry(ctx)
	if err != nil {
		return err
	}
	for _, svc := range append([]string{t.Service.Name}, t.Svc(t.Service.Name).Backends...) {
		s := t.Svc(svc)
		host := s.Name + "." + s.Namespace + ".svc.cluster.local"
		want := "HTTP"
		if s.Protocol == topology.AppGRPC {
			want = "GRPC"
		}
		if t.Options.Protocol == topology.ProtocolTCP {
			want = "TCP"
		}
		got, name := "none", ""
		for _, rs := range reg {
			if rs.Hostname != host {
				continue
			}
			for _, p := range rs.Ports {
				if p.Port == s.Port {
					got, name = p.Protocol, p.Name
				}
			}
		}
		line := fmt.Sprintf("istiod holds %s:%d as %s (port %q)", host, s.Port, got, name)
		switch {
		case in.ambient && want == "TCP" && t.Options.Mode == topology.ModeWaypoint:
			line += "; the waypoint carries it at L4 (its tcp_proxy), between the ztunnels' HBONE"
		case in.ambient && want == "TCP":
			line += "; ztunnel carries it at L4 as it does any port"
		}
		mc.Lines = append(mc.Lines, line+".")
		if got != want {
			mc.Invalid = append(mc.Invalid, fmt.Sprintf("istiod holds %s:%d as %s, want %s", host, s.Port, got, want))
		}
	}
	return nil
}
