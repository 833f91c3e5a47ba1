// Package labapi is the netns lab's Kubernetes API server: etcd and
// kube-apiserver (the binaries `make k8s-tools` caches), no controllers,
// no scheduler, no kubelet. It holds what a mesh's real control plane
// reads about the lab: namespaces, service accounts, nodes, pods (with
// their netns IPs and labels; their status is written Running and Ready
// here, since no kubelet runs them), services and their EndpointSlices,
// and the mesh's CRDs and policy objects. TokenRequest and TokenReview
// work (a service-account signing key is configured), so a mesh's CA can
// check a workload's token.
//
// It listens on 127.0.0.1 of the host only, on a port chosen at start; a
// control plane in the lab's namespaces reaches it through a forwarder
// (netlab). Close stops both processes and removes its directory.
package labapi

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/platform/kube/client"
	"github.com/meshbench/meshbench/internal/sys/pki"
	"github.com/meshbench/meshbench/internal/sys/process"
)

// KubernetesVersion is the kube-apiserver `make k8s-tools` builds
// (hack/k8s/build-tools.sh); the test harness pins the same.
const KubernetesVersion = "v1.36.3"

// BinEnv overrides the directory holding kube-apiserver (as for the
// test harness).
const BinEnv = "MESHBENCH_K8S_BIN"

// ErrNoBinaries is returned (wrapped) when kube-apiserver or etcd is
// missing.
var ErrNoBinaries = errors.New("lab API server binaries not found")

// BinDir is $MESHBENCH_K8S_BIN, else where `make k8s-tools` caches the
// control plane's binaries.
func BinDir() string {
	if d := os.Getenv(BinEnv); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "meshbench", "k8s", KubernetesVersion+"-kwok0.8.0-ms0.9.0")
}

// Check says whether Start can run here: kube-apiserver in BinDir and
// etcd on PATH; the error names what is missing and what installs it.
func Check() (apiserver, etcd string, err error) {
	apiserver = filepath.Join(BinDir(), "kube-apiserver")
	if fi, err := os.Stat(apiserver); err != nil || fi.Mode()&0o111 == 0 {
		return "", "", fmt.Errorf("%w: %s is missing (run `make k8s-tools`, or set %s)", ErrNoBinaries, apiserver, BinEnv)
	}
	if etcd, err = exec.LookPath("etcd"); err != nil {
		return "", "", fmt.Errorf("%w: etcd is not on PATH (run `make k8s-tools`, which installs Debian's etcd-server)", ErrNoBinaries)
	}
	return apiserver, etcd, nil
}

// Options configure Start.
type Options struct {
	// Dir holds the PKI, etcd's data, the kubeconfig and the logs; Close
	// removes it. Required; it must not exist or be empty.
	Dir string
	// ServiceCIDR is the range the lab's service VIPs come from
	// (kube-apiserver's --service-cluster-ip-range). The API server takes
	// its first address for the "kubernetes" Service, so it must not be
	// one of the lab's VIPs.
	ServiceCIDR netip.Prefix
	// Log gets one line per step (nil: discarded).
	Log io.Writer
}

// Server is a running lab API server.
type Server struct {
	Dir        string
	Kubeconfig string // self-contained, admin (system:masters)
	URL        string // https://127.0.0.1:PORT
	CAPEM      []byte // the API server's CA
	Client     *client.Client
	// StartTime is from Start's call to the API server's /readyz;
	// Started when Start was called.
	StartTime time.Duration
	Started   time.Time

	etcd, api *process.Child
	log       io.Writer
	// base is the server's Snapshot (nil: none taken).
	base *Baseline
	// quietDyn is quiet's client, made once.
	quietOnce sync.Once
	quietDyn  dynamic.Interface
	quietErr  error
}

// Start brings up etcd and kube-apiserver and returns once the API server
// is ready; on error it has removed what it made.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	t0 := time.Now()
	apiBin, etcdBin, err := Check()
	if err != nil {
		return nil, err
	}
	if o.Dir == "" || !o.ServiceCIDR.IsValid() {
		return nil, errors.New("lab API server: a directory and a service range are required")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	s := &Server{Dir: o.Dir, Kubeconfig: filepath.Join(o.Dir, "kubeconfig"), Started: t0.UTC(), log: o.Log}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("lab API server (files in %s): %w", o.Dir, err), s.Close())
		}
	}()
	logDir := filepath.Join(o.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	p, err := writePKI(filepath.Join(o.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	s.CAPEM = p.caPEM
	s.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := os.WriteFile(s.Kubeconfig, p.kubeconfig(s.URL), 0o600); err != nil {
		return nil, err
	}
	etcdClient := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	etcdPeer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	s.etcd, err = process.StartLogged("etcd", logDir, exec.Command(etcdBin,
		"--name=lab", "--data-dir="+filepath.Join(o.Dir, "etcd"),
		"--listen-client-urls="+etcdClient, "--advertise-client-urls="+etcdClient,
		"--listen-peer-urls="+etcdPeer, "--initial-advertise-peer-urls="+etcdPeer,
		"--initial-cluster=lab="+etcdPeer,
		// The lab's objects are rebuilt every run; fsync only costs time.
		"--unsafe-no-fsync"), nil)
	if err != nil {
		return nil, err
	}
	if err := s.etcd.WaitHTTP(ctx, http.DefaultClient, etcdClient+"/health", 30*time.Second); err != nil {
		return nil, err
	}
	fmt.Fprintf(s.log, "lab API server: etcd ready after %v\n", time.Since(t0).Round(time.Millisecond))
	s.api, err = process.StartLogged("kube-apiserver", logDir, exec.Command(apiBin,
		"--etcd-servers="+etcdClient,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(o.Dir, "apiserver"),
		"--service-cluster-ip-range="+o.ServiceCIDR.String(),
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"),
		"--service-account-key-file="+p.path("sa.pub"), "--service-account-signing-key-file="+p.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=RBAC",
		// No endpoint for the "kubernetes" Service: 127.0.0.1 is refused
		// as one, and nothing in the lab calls it by its VIP.
		"--endpoint-reconciler-type=none",
		// Debian's etcd 3.4.23 lacks RequestWatchProgress (see the test
		// harness, kubetest): watch-list requests would end at once.
		"--feature-gates=WatchList=false"), nil)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caPEM)
	admin, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}}}
	defer hc.CloseIdleConnections()
	if err := s.api.WaitHTTP(ctx, hc, s.URL+"/readyz", 120*time.Second); err != nil {
		return nil, err
	}
	s.StartTime = time.Since(t0)
	fmt.Fprintf(s.log, "lab API server: kube-apiserver ready after %v\n", s.StartTime.Round(time.Millisecond))
	if s.Client, err = client.Connect(ctx, client.ConnectOptions{Kubeconfig: s.Kubeconfig}); err != nil {
		return nil, err
	}
	return s, nil
}

// Memory is the RSS of etcd and kube-apiserver now, in bytes.
func (s *Server) Memory() (etcd, apiserver uint64, err error) {
	e, err := sample.ReadProc(s.etcd.PID)
	if err != nil {
		return 0, 0, err
	}
	a, err := sample.ReadProc(s.api.PID)
	if err != nil {
		return 0, 0, err
	}
	return e.RSSBytes, a.RSSBytes, nil
}

// PIDs are etcd's and kube-apiserver's process IDs (for sampling).
func (s *Server) PIDs() (etcd, apiserver int) { return s.etcd.PID, s.api.PID }

// Died returns an error when etcd or kube-apiserver has exited.
func (s *Server) Died() error {
	for _, c := range []*process.Child{s.etcd, s.api} {
		if c != nil && c.Exited() {
			return fmt.Errorf("lab API server: %s exited: %v\n%s", c.Name, c.Err(), c.Tail(10))
		}
	}
	return nil
}

// Close stops kube-apiserver and etcd and removes the directory; safe to
// call twice.
func (s *Server) Close() error {
	for _, c := range []*process.Child{s.api, s.etcd} {
		if c != nil {
			c.Stop(5 * time.Second)
		}
	}
	s.api, s.etcd = nil, nil
	if s.Dir == "" {
		return nil
	}
	return os.RemoveAll(s.Dir)
}

// freePorts are n distinct free loopback ports (free when asked: a
// component binds them shortly after).
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// labPKI is the API server's throw-away PKI: a CA, the serving and the
// admin client certificates, the service-account signing key.
type labPKI struct {
	dir                              string
	caPEM, adminCertPEM, adminKeyPEM []byte
}

func (p *labPKI) path(name string) string { return filepath.Join(p.dir, name) }

func writePKI(dir string) (*labPKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &labPKI{dir: dir}
	ca, err := pki.NewRootCA(pkix.Name{CommonName: "meshbench-lab-apiserver-ca"}, pki.Options{})
	if err != nil {
		return nil, err
	}
	p.caPEM = ca.CertPEM()
	api, err := ca.IssueLeaf(pki.LeafSpec{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPs:         []netip.Addr{netip.MustParseAddr("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, pki.Options{})
	if err != nil {
		return nil, err
	}
	admin, err := ca.IssueLeaf(pki.LeafSpec{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, pki.Options{})
	if err != nil {
		return nil, err
	}
	p.adminCertPEM, p.adminKeyPEM = admin.CertPEM(), admin.KeyPEM()
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"ca.crt": p.caPEM, "apiserver.crt": api.CertPEM(), "apiserver.key": api.KeyPEM(),
		"sa.key": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		"sa.pub": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
	}
	for name, b := range files {
		if err := os.WriteFile(p.path(name), b, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// kubeconfig is a self-contained kubeconfig for server as admin.
func (p *labPKI) kubeconfig(server string) []byte {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: admin
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: lab
  context: {cluster: lab, user: admin}
current-context: lab
`, server, b64(p.caPEM), b64(p.adminCertPEM), b64(p.adminKeyPEM))
}
