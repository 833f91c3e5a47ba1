package bench

import (
	"errors"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/netlab"
)

// TestNeedsEnvoy: which local cells run an Envoy on each substrate.
func TestNeedsEnvoy(t *testing.T) {
	netns := &netlab.Substrate{}
	for _, tt := range []struct {
		mode    topology.Mode
		gateway bool
		netns   bool
		want    bool
	}{
		{topology.ModeNone, false, false, false},   // no mesh, no gateway: no proxy
		{topology.ModeNone, true, false, true},     // the gateway is an Envoy
		{topology.ModeSidecar, false, false, true}, // sidecars
		{topology.ModeAmbient, false, false, true}, // loopback: Envoy stands in for ztunnel
		{topology.ModeAmbient, false, true, false}, // netns: the real ztunnel
		{topology.ModeWaypoint, false, true, true}, // netns: the waypoint is an Envoy
		{topology.ModeLinkerd, false, true, false}, // linkerd2-proxy, no Envoy
		{topology.ModeLinkerd, true, true, true},   // but its gateway is one
	} {
		o := topology.DefaultOptions()
		o.Mode, o.Gateway = tt.mode, tt.gateway
		var got bool
		if tt.netns {
			got = NeedsEnvoy(o, netns)
		} else {
			got = NeedsEnvoy(o, nil)
		}
		if got != tt.want {
			t.Errorf("NeedsEnvoy(%s, gateway %v, netns %v) = %v; want %v", tt.mode, tt.gateway, tt.netns, got, tt.want)
		}
	}
}

// TestChooseSubstrateBadChoice: an unknown --substrate is a usage error
// naming what is allowed, before anything is looked for.
func TestChooseSubstrateBadChoice(t *testing.T) {
	_, _, err := ChooseSubstrate("bridge", "", "", []topology.Options{topology.DefaultOptions()})
	var ue *UsageError
	if !errors.As(err, &ue) || err.Error() != `--substrate "bridge": allowed: auto, netns, loopback` {
		t.Errorf("err %v; want a usage error naming auto, netns, loopback", err)
	}
}
