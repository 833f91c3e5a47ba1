// Package proxy runs Linkerd's real data-plane proxy (linkerd2-proxy, the
// Rust sidecar) outside Kubernetes: it finds the binary, writes the
// identity files a proxy's start script writes in a pod (a P-256 key as
// PKCS #8 DER and a CSR for its identity), starts it inside a pod's
// network namespace as the proxy user with Linkerd's environment, waits
// for its admin /ready, and reads its admin /metrics (parsed with
// prometheus/common) for the TLS state of its connections.
//
// It speaks to a control plane on the pod's loopback (plaintext gRPC: the
// proxy uses TLS only for non-loopback control-plane addresses), such as
// the lab's internal/mesh/linkerd/controlplane.
package proxy

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/measure/probe"
	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/process"
	"github.com/meshbench/meshbench/internal/sys/toolbin"
)

// The proxy's ports and user, Linkerd's defaults (what proxy-init's capture
// redirects to and exempts).
const (
	PortInbound  = 4143 // inbound listener, all addresses
	PortOutbound = 4140 // outbound listener, 127.0.0.1 only
	PortAdmin    = 4191 // admin: /ready, /live, /metrics
	PortControl  = 4190 // tap/control listener
	// UID is the proxy's user and group (proxy-init exempts its packets).
	UID = 2102
)

// SharedSHA256 is the sha256 of the linkerd2-proxy build kept beside the
// project (shared/bin/linkerd2-proxy, see its linkerd2-proxy.md).
const SharedSHA256 = "e6ca3e4ab66d26cf9be57442af1178675fd76b49030e9be86300deeffc9a78a9"

// EnvBinary names a linkerd2-proxy binary to use instead of the searched
// ones.
const EnvBinary = "MESHBENCH_LINKERD_PROXY"

// Binary is how linkerd2-proxy is found (toolbin): --linkerd-proxy PATH,
// $MESHBENCH_LINKERD_PROXY, .tools/linkerd2-proxy/linkerd2-proxy (make
// linkerd-proxy) or ../shared/bin/linkerd2-proxy when its sha256 is
// SharedSHA256.
var Binary = toolbin.Binary{Name: "linkerd2-proxy", SharedSHA256: SharedSHA256, Env: EnvBinary, Flag: "--linkerd-proxy", Make: "linkerd-proxy"}

// Find returns the linkerd2-proxy binary to run (Binary.Find).
func Find(explicit, dir string) (string, error) { return Binary.Find(explicit, dir) }

// FileSHA256 returns the hex sha256 of a file.
func FileSHA256(path string) (string, error) { return toolbin.FileSHA256(path) }

// releaseLine is the proxy's first log line:
// "linkerd2_proxy: release VERSION (GITSHA) by VENDOR on DATE".
var releaseLine = regexp.MustCompile(`linkerd2_proxy: release (\S+) \(([^)]*)\) by (.*?) on (\S+)`)

// Version is what the binary says of itself, for the manifest.
type Version struct {
	Release string `json:"release"` // e.g. "0.0.0-dev" for a build from source
	GitSHA  string `json:"git_sha,omitempty"`
	Vendor  string `json:"vendor,omitempty"`
	Date    string `json:"date"`
	SHA256  string `json:"sha256"` // of the binary
}

// String is "linkerd2-proxy RELEASE (GITSHA) DATE sha256:…".
func (v Version) String() string {
	s := "linkerd2-proxy " + v.Release
	if v.GitSHA != "" {
		s += " (" + v.GitSHA + ")"
	}
	return s + " built " + v.Date + " sha256:" + v.SHA256
}

// ParseVersion reads the release line out of the proxy's log.
func ParseVersion(log string) (Version, error) {
	m := releaseLine.FindStringSubmatch(log)
	if m == nil {
		return Version{}, errors.New("no release line in the proxy's output")
	}
	return Version{Release: m[1], GitSHA: m[2], Vendor: strings.TrimSpace(m[3]), Date: m[4]}, nil
}

// GetVersion starts the binary with no configuration: it logs its release
// line and exits refusing the configuration (the proxy has no --version).
func GetVersion(ctx context.Context, bin string) (Version, error) {
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = []string{"LINKERD2_PROXY_LOG=linkerd2_proxy=info", "LINKERD2_PROXY_LOG_FORMAT=plain"}
	out, _ := cmd.CombinedOutput() // exits 1: "Invalid configuration"
	v, err := ParseVersion(string(out))
	if err != nil {
		return Version{}, fmt.Errorf("%s: %w: %s", bin, err, bytes.TrimSpace(out))
	}
	if v.SHA256, err = FileSHA256(bin); err != nil {
		return Version{}, err
	}
	return v, nil
}

// IdentityFiles are what LINKERD2_PROXY_IDENTITY_DIR and
// LINKERD2_PROXY_IDENTITY_TOKEN_FILE point at.
type IdentityFiles struct {
	Dir       string // holds key.p8 (PKCS #8 DER) and csr.der
	TokenFile string
}

// WriteIdentity makes a P-256 key and a CSR naming name (CN and the only
// DNS SAN, as Linkerd's proxy-identity does) in dir, and the token file,
// all owned by uid (the proxy reads them as that user); the key is mode
// 0600.
func WriteIdentity(dir, name, token string, uid int) (IdentityFiles, error) {
	f := IdentityFiles{Dir: dir, TokenFile: filepath.Join(dir, "token")}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	k8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return f, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}}, key)
	if err != nil {
		return f, fmt.Errorf("making CSR for %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, err
	}
	for _, w := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{"key.p8", k8, 0o600}, {"csr.der", csr, 0o644}, {"token", []byte(token), 0o600}} {
		p := filepath.Join(dir, w.name)
		if err := os.WriteFile(p, w.data, w.mode); err != nil {
			return f, err
		}
		if err := os.Chown(p, uid, uid); err != nil {
			return f, err
		}
	}
	return f, os.Chown(dir, uid, uid)
}

// Spec is one proxy beside one workload.
type Spec struct {
	Bin string
	// NS is the pod's network namespace.
	NS *netns.NS
	// Name is the proxy's identity
	// (SA.NS.serviceaccount.identity.linkerd.cluster.local).
	Name string
	// Workload is LINKERD2_PROXY_POLICY_WORKLOAD ("NS:NAME").
	Workload string
	// ControlAddr is the control plane's address on the pod's loopback,
	// e.g. 127.0.0.1:8090 (identity, destination and policy).
	ControlAddr netip.AddrPort
	// IdentityAddr, DestinationAddr and PolicyAddr, when set, are each
	// API's own address instead of ControlAddr (Linkerd's controllers
	// serve them on three ports): on the pod's loopback (plaintext) or
	// a controller pod's IP (TLS, with the *SvcName below).
	IdentityAddr, DestinationAddr, PolicyAddr netip.AddrPort
	// IdentitySvcName, DestinationSvcName and PolicySvcName, when set,
	// are the identities the proxy verifies on each API's server
	// (LINKERD2_PROXY_*_SVC_NAME, as Linkerd's injector sets them, e.g.
	// linkerd-destination.linkerd.serviceaccount.identity.linkerd.cluster.local).
	// The proxy requires the name with a non-loopback address and then
	// reaches that API over TLS, verifying it; to a loopback address it
	// speaks plaintext whatever the name (its env.rs, parse_control_addr).
	IdentitySvcName, DestinationSvcName, PolicySvcName string
	// TrustAnchorsPEM is the trust anchors' PEM text.
	TrustAnchorsPEM string
	Identity        IdentityFiles
	// InboundPorts are the app's ports whose inbound policy the proxy
	// watches at start.
	InboundPorts []int
	// DefaultInboundPolicy is LINKERD2_PROXY_INBOUND_DEFAULT_POLICY, the
	// policy of a port until the policy controller's answer: ""
	// is all-authenticated; Linkerd's chart gives its controllers' pods
	// all-unauthenticated.
	DefaultInboundPolicy string
	// RequireTLSPorts are LINKERD2_PROXY_INBOUND_PORTS_REQUIRE_TLS: ports
	// that refuse plaintext whatever the policy (the chart's identity
	// pod: 8080).
	RequireTLSPorts []int
	// ProfileNetworks are where IP targets get a service profile lookup.
	ProfileNetworks []netip.Prefix
	// Cores is LINKERD2_PROXY_CORES: 0 leaves the proxy's default (one
	// single-threaded runtime, as Linkerd's default injection).
	Cores int
	// LogLevel is LINKERD2_PROXY_LOG; "" means warn,linkerd=info.
	LogLevel string
	// Log receives stdout and stderr.
	Log io.Writer
}

// Env is the proxy's environment for spec.
func (s Spec) Env() []string {
	level := s.LogLevel
	if level == "" {
		level = "warn,linkerd=info,linkerd2_proxy=info"
	}
	addr := func(a netip.AddrPort) string {
		if a.IsValid() {
			return a.String()
		}
		return s.ControlAddr.String()
	}
	env := []string{
		"LINKERD2_PROXY_LOG=" + level,
		"LINKERD2_PROXY_LOG_FORMAT=plain",
		fmt.Sprintf("LINKERD2_PROXY_INBOUND_LISTEN_ADDR=0.0.0.0:%d", PortInbound),
		fmt.Sprintf("LINKERD2_PROXY_OUTBOUND_LISTEN_ADDR=127.0.0.1:%d", PortOutbound),
		fmt.Sprintf("LINKERD2_PROXY_ADMIN_LISTEN_ADDR=0.0.0.0:%d", PortAdmin),
		fmt.Sprintf("LINKERD2_PROXY_CONTROL_LISTEN_ADDR=0.0.0.0:%d", PortControl),
		"LINKERD2_PROXY_IDENTITY_DIR=" + s.Identity.Dir,
		"LINKERD2_PROXY_IDENTITY_TOKEN_FILE=" + s.Identity.TokenFile,
		"LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS=" + s.TrustAnchorsPEM,
		"LINKERD2_PROXY_IDENTITY_LOCAL_NAME=" + s.Name,
		"LINKERD2_PROXY_IDENTITY_SVC_ADDR=" + addr(s.IdentityAddr),
		"LINKERD2_PROXY_DESTINATION_SVC_ADDR=" + addr(s.DestinationAddr),
		"LINKERD2_PROXY_POLICY_SVC_ADDR=" + addr(s.PolicyAddr),
		"LINKERD2_PROXY_POLICY_WORKLOAD=" + s.Workload,
		"LINKERD2_PROXY_INBOUND_DEFAULT_POLICY=" + cmp.Or(s.DefaultInboundPolicy, "all-authenticated"),
	}
	for _, n := range []struct{ api, name string }{
		{"IDENTITY", s.IdentitySvcName}, {"DESTINATION", s.DestinationSvcName}, {"POLICY", s.PolicySvcName},
	} {
		if n.name != "" {
			env = append(env, "LINKERD2_PROXY_"+n.api+"_SVC_NAME="+n.name)
		}
	}
	for _, ports := range []struct {
		name  string
		ports []int
	}{{"LINKERD2_PROXY_INBOUND_PORTS", s.InboundPorts}, {"LINKERD2_PROXY_INBOUND_PORTS_REQUIRE_TLS", s.RequireTLSPorts}} {
		if len(ports.ports) > 0 {
			var ps []string
			for _, p := range ports.ports {
				ps = append(ps, strconv.Itoa(p))
			}
			env = append(env, ports.name+"="+strings.Join(ps, ","))
		}
	}
	if len(s.ProfileNetworks) > 0 {
		var ns []string
		for _, n := range s.ProfileNetworks {
			ns = append(ns, n.String())
		}
		env = append(env, "LINKERD2_PROXY_DESTINATION_PROFILE_NETWORKS="+strings.Join(ns, ","))
	}
	if s.Cores > 0 {
		env = append(env, fmt.Sprintf("LINKERD2_PROXY_CORES=%d", s.Cores))
	}
	return env
}

// Process is a running proxy.
type Process struct {
	Spec    Spec
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// Start starts the proxy in spec.NS as UID, like every other child of
// meshbench (process.StartIn). It does not wait for readiness
// (Ready).
func Start(spec Spec) (*Process, error) {
	cmd := exec.Command(spec.Bin)
	cmd.Env = spec.Env()
	cmd.Stdout, cmd.Stderr = spec.Log, spec.Log
	// Its own process group, SIGTERM if meshbench dies (process.StartIn),
	// and the uid proxy-init's rules exempt.
	process.SetUser(cmd, UID, UID)
	if err := process.StartIn(cmd, spec.NS.Do); err != nil {
		return nil, fmt.Errorf("starting linkerd2-proxy for %s: %w", spec.Workload, err)
	}
	p := &Process{Spec: spec, cmd: cmd, exited: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// PID is the process id (sampled from /proc like every other component).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Ready waits until the admin /ready answers 200 (the proxy has its
// certificate and its policies), or ctx ends, or the proxy exits.
func (p *Process) Ready(ctx context.Context) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/ready", PortAdmin)
	err := probe.WaitOK(ctx, p.httpClient(), url, p.exited, 20*time.Millisecond)
	switch {
	case errors.Is(err, probe.ErrExited):
		return fmt.Errorf("linkerd2-proxy for %s exited before it was ready: %v", p.Spec.Workload, p.waitErr)
	case err != nil:
		return fmt.Errorf("waiting for linkerd2-proxy for %s to be ready: %w", p.Spec.Workload, err)
	}
	return nil
}

// Metrics returns the admin /metrics exposition.
func (p *Process) Metrics(ctx context.Context) (string, error) {
	text, err := probe.Get(ctx, p.httpClient(), fmt.Sprintf("http://127.0.0.1:%d/metrics", PortAdmin), 32<<20)
	if err != nil {
		return "", fmt.Errorf("scraping linkerd2-proxy for %s: %w", p.Spec.Workload, err)
	}
	return text, nil
}

// Stats scrapes the proxy and sums its traffic's TLS state.
func (p *Process) Stats(ctx context.Context) (Stats, error) {
	text, err := p.Metrics(ctx)
	if err != nil {
		return Stats{}, err
	}
	return ParseStats(strings.NewReader(text))
}

// httpClient dials the admin port inside the pod's namespace (localhost is
// always authorized by the proxy).
func (p *Process) httpClient() *http.Client { return p.Spec.NS.HTTPClient(5*time.Second, false) }

// Stop sends SIGTERM to its process group, waits up to grace (the proxy
// drains its connections and can linger), then kills the group
// (process.Stop); safe to call twice.
func (p *Process) Stop(grace time.Duration) error {
	process.Stop(p.PID(), p.exited, grace)
	return nil
}

// Tail returns the last n lines of a log file, for error messages.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
