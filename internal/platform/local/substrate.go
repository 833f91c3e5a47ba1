package local

import (
	"context"
	"io"
	"os/exec"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/envoy/bootstrap"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sys/pki"
	"github.com/meshbench/meshbench/internal/sys/process"
)

// SubstrateLoopback is the name of the default substrate: every process
// in the host's network namespace on its own 127.0.N.x address, Envoy
// standing in for ztunnel (LAB.md).
const SubstrateLoopback = "loopback"

// Substrate is a network a lab's processes run in instead of loopback:
// network namespaces with Istio's real ztunnel (internal/platform/netlab).
// A nil Substrate in Options is loopback. One value serves every lab of a
// plan, so cells never mix substrates.
type Substrate interface {
	// Name is what the manifest records ("netns").
	Name() string
	// Supports returns why a topology with options o cannot run on the
	// substrate (one line), or nil.
	Supports(o topology.Options) error
	// Up makes the network for topology t with its files in dir and
	// returns it with the topology as it runs there: the pods' addresses
	// and the load targets of the substrate, and only the Envoys the lab
	// still has to start. On error it has removed what it made.
	Up(ctx context.Context, t *topology.Topology, dir string, log io.Writer) (Network, *topology.Topology, error)
}

// Network is a substrate made for one lab.
type Network interface {
	// Enter runs its function on the calling thread inside the network of
	// pod (named as in the topology), for starting that pod's processes
	// (process.StartIn).
	Enter(pod string) func(func() error) error
	// EnvoyIn is where the lab's Envoy p runs on the substrate: the
	// namespace to start it in (and reach its admin in) and the group to
	// run it as (a sidecar: Istio's 1337, which its pod's capture
	// exempts); nil and 0: here, as meshbench.
	EnvoyIn(p topology.Proxy) (in func(func() error) error, gid int)
	// Proxies are the substrate's own data-plane processes (the node
	// ztunnels), sampled beside the lab's.
	Proxies() []sample.Target
	// Died returns an error when one of those processes has exited.
	Died() error
	// Manifest is what every cell's manifest records about the network
	// (options key per entry: the ztunnel's version and sha256, the
	// namespaces' prefix and subnet).
	Manifest() map[string]any
	// StartInterval scrapes the substrate proxies' counters at the start
	// of a cell: Stats then counts from there, also on a network kept up
	// across cells.
	StartInterval(ctx context.Context) error
	// Stats are the substrate proxies' own counters since StartInterval,
	// by proxy name (nil without proxies); the raw scrapes go into rawDir.
	Stats(ctx context.Context, rawDir string) (map[string]results.NodeProxyStats, error)
	// Close stops the substrate's processes and removes everything it
	// made; safe to call twice.
	Close() error
}

// substrateName is the manifest's name of o's substrate.
func (o Options) substrateName() string {
	if o.Substrate == nil {
		return SubstrateLoopback
	}
	return o.Substrate.Name()
}

// enter is how the lab starts pod's processes: in the pod's network on a
// substrate, nil (where meshbench runs) on loopback.
func (l *Lab) enter(pod string) func(func() error) error {
	if l.net == nil {
		return nil
	}
	return l.net.Enter(pod)
}

// startIn starts cmd as process.Start does, inside in when it is not nil.
func startIn(cmd *exec.Cmd, in func(func() error) error) error {
	return process.StartIn(cmd, in)
}

// loadPod is the topology's pod the load generator runs in on a
// substrate: the client.
const loadPod = "client"

// CASource is a Network whose own proxies trust a CA of theirs (the netns
// substrate's ztunnels, which fetch certificates from it over Istio's CA
// API): the lab's Envoys then get their certificates from the same CA, so
// a waypoint and the ztunnels verify each other.
type CASource interface {
	// CA returns the network's CA, or nil when it has none (no ztunnel).
	CA() *pki.CA
}

// writeCerts writes the lab's PKI into dir: from the network's CA when
// it has one, else from a new CA.
func (l *Lab) writeCerts(dir string) (*bootstrap.Certs, error) {
	if cs, ok := l.net.(CASource); ok && cs.CA() != nil {
		return bootstrap.WriteCertsFrom(cs.CA(), l.topo, dir)
	}
	return bootstrap.WriteCerts(l.topo, dir)
}

// MeshCheck is a mesh's own verdict on a cell's mTLS, from its proxies'
// counters (Linkerd's request_total by tls and peer identity).
type MeshCheck struct {
	// Derived are counts for the manifest's Derived.
	Derived map[string]float64
	// Invalid are the reasons the cell is invalid; none: verified.
	Invalid []string
	// Lines are what `run` prints: the counters and the verdict.
	Lines []string
}

// MeshChecker is a Network whose mesh proxies keep their own request
// counters (Linkerd's proxies, on the netns substrate): CheckMesh reads
// them since StartInterval, keeps the raw scrapes in rawDir and says
// whether the cell's traffic was all mTLS.
type MeshChecker interface {
	CheckMesh(ctx context.Context, rawDir string) (MeshCheck, error)
}
