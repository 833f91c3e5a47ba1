package ztunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/measure/probe"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/process"
	"github.com/meshbench/meshbench/internal/sys/toolbin"
)

// Ports of ztunnel's own listeners in its namespace.
const (
	PortAdmin     = 15000 // 127.0.0.1 only
	PortStats     = 15020 // Prometheus metrics
	PortReadiness = 15021
)

// SharedSHA256 is the sha256 of the production ztunnel build kept beside
// the project (shared/bin/ztunnel, see its ztunnel.md).
const SharedSHA256 = "9d650eedebd9e4455cc66cf1364108d1e23b0ca198c51f758350e31bb7ed042e"

// EnvBinary names a ztunnel binary to use instead of the searched ones.
const EnvBinary = "MESHBENCH_ZTUNNEL"

// Binary is how ztunnel is found (toolbin): --ztunnel PATH,
// $MESHBENCH_ZTUNNEL, .tools/ztunnel/ztunnel (make ztunnel) or
// ../shared/bin/ztunnel when its sha256 is SharedSHA256.
var Binary = toolbin.Binary{Name: "ztunnel", SharedSHA256: SharedSHA256, Env: EnvBinary, Flag: "--ztunnel", Make: "ztunnel"}

// Find returns the ztunnel binary to run (Binary.Find).
func Find(explicit, dir string) (string, error) { return Binary.Find(explicit, dir) }

// FileSHA256 returns the hex sha256 of a file.
func FileSHA256(path string) (string, error) { return toolbin.FileSHA256(path) }

// Version runs "ztunnel version" and returns its line.
func Version(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s version: %w: %s", bin, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// Spec is one shared-mode (node) ztunnel.
type Spec struct {
	Bin        string
	NS         *netns.NS // the node's namespace: ztunnel's own listeners go there
	NodeName   string
	ConfigPath string // LOCAL_XDS_PATH (unless XDS is set)
	UDS        string // INPOD_UDS, where the ZDS agent listens
	CAAddress  string // "https://127.0.0.1:PORT" in the node's namespace
	RootCAPath string // the CA's root, which also signs its serving certificate
	Token      string // AUTH_TOKEN: a literal, or the path of a token file
	ClusterID  string
	// XDS, when set, has ztunnel take its workloads, services and
	// authorization policies from a control plane's xDS (istiod's WDS)
	// instead of the local file ConfigPath.
	XDS *XDS
	// WorkerThreads is ZTUNNEL_WORKER_THREADS; 0 means ztunnel's default (2).
	WorkerThreads int
	// Log receives stdout and stderr (the access log at RUST_LOG=info).
	Log io.Writer
}

// XDS is where a ztunnel gets its config from a control plane, and who it
// is to it (as Istio's ztunnel DaemonSet sets it from the downward API).
type XDS struct {
	// Address is the control plane's xDS address ("https://IP:15012");
	// the CA is CAAddress, verified with RootCAPath as well.
	Address string
	// Hostname is the name the control plane's serving certificate
	// carries (ALT_XDS_HOSTNAME, ALT_CA_HOSTNAME: the address is an IP).
	Hostname string
	// The ztunnel pod: its name, namespace, service account and IP. The
	// CA lets it ask certificates for the pods of its own node only.
	PodName, PodNamespace, ServiceAccount, InstanceIP string
}

// Process is a running ztunnel.
type Process struct {
	Spec    Spec
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	waitErr error
}

// Start starts ztunnel in spec.NS. It does not wait for readiness (Ready).
func Start(spec Spec) (*Process, error) {
	threads := spec.WorkerThreads
	if threads == 0 {
		threads = 2
	}
	cmd := exec.Command(spec.Bin)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/bin"}
	if x := spec.XDS; x != nil {
		cmd.Env = append(cmd.Env,
			"XDS_ADDRESS="+x.Address,
			"XDS_ROOT_CA="+spec.RootCAPath,
			"ALT_XDS_HOSTNAME="+x.Hostname,
			"ALT_CA_HOSTNAME="+x.Hostname,
			"POD_NAME="+x.PodName,
			"POD_NAMESPACE="+x.PodNamespace,
			"SERVICE_ACCOUNT="+x.ServiceAccount,
			"INSTANCE_IP="+x.InstanceIP,
			"ISTIO_META_CLUSTER_ID="+spec.ClusterID,
			"ISTIO_META_ENABLE_HBONE=true",
		)
	} else {
		cmd.Env = append(cmd.Env, "XDS_ADDRESS=", "LOCAL_XDS_PATH="+spec.ConfigPath)
	}
	cmd.Env = append(cmd.Env,
		"PROXY_MODE=shared",
		"INPOD_UDS="+spec.UDS,
		"NODE_NAME="+spec.NodeName,
		"CA_ADDRESS="+spec.CAAddress,
		"CA_ROOT_CA="+spec.RootCAPath,
		"AUTH_TOKEN="+spec.Token,
		"CLUSTER_ID="+spec.ClusterID,
		fmt.Sprintf("ZTUNNEL_WORKER_THREADS=%d", threads),
		"RUST_LOG=info",
	)
	cmd.Stdout, cmd.Stderr = spec.Log, spec.Log
	// Its own process group, and SIGTERM if meshbench dies: a crashed
	// run leaves no ztunnel behind (process.StartIn).
	if err := process.StartIn(cmd, spec.NS.Do); err != nil {
		return nil, fmt.Errorf("starting ztunnel on %s: %w", spec.NodeName, err)
	}
	p := &Process{Spec: spec, cmd: cmd, exited: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// PID is the process id (sampled from /proc like every other component).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Ready waits until ztunnel's readiness endpoint answers 200 in its
// namespace, or ctx ends, or ztunnel exits.
func (p *Process) Ready(ctx context.Context) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz/ready", PortReadiness)
	err := probe.WaitOK(ctx, p.httpClient(), url, p.exited, 50*time.Millisecond)
	switch {
	case errors.Is(err, probe.ErrExited):
		return fmt.Errorf("ztunnel on %s exited before it was ready: %v", p.Spec.NodeName, p.waitErr)
	case err != nil:
		return fmt.Errorf("waiting for ztunnel on %s to be ready: %w", p.Spec.NodeName, err)
	}
	return nil
}

// Metrics returns ztunnel's Prometheus exposition (its stats port).
func (p *Process) Metrics(ctx context.Context) (string, error) {
	text, err := probe.Get(ctx, p.httpClient(), fmt.Sprintf("http://127.0.0.1:%d/metrics", PortStats), 16<<20)
	if err != nil {
		return "", fmt.Errorf("scraping ztunnel on %s: %w", p.Spec.NodeName, err)
	}
	return text, nil
}

// ConfigDump returns ztunnel's admin /config_dump (JSON): the workloads,
// services, policies and certificates it holds.
func (p *Process) ConfigDump(ctx context.Context) ([]byte, error) {
	text, err := probe.Get(ctx, p.httpClient(), fmt.Sprintf("http://127.0.0.1:%d/config_dump", PortAdmin), 64<<20)
	if err != nil {
		return nil, fmt.Errorf("config dump of ztunnel on %s: %w", p.Spec.NodeName, err)
	}
	return []byte(text), nil
}

// httpClient dials inside the node's namespace (ztunnel's own ports).
func (p *Process) httpClient() *http.Client { return p.Spec.NS.HTTPClient(5*time.Second, false) }

// Stop sends SIGTERM to its process group, waits up to grace, then kills
// the group (process.Stop); it is safe to call twice.
func (p *Process) Stop(grace time.Duration) error {
	process.Stop(p.PID(), p.exited, grace)
	return nil
}
