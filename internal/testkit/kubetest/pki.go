package kubetest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"

	"github.com/meshbench/meshbench/internal/sys/pki"
)

// clusterPKI holds the paths of the throw-away certificates and keys of one
// cluster, all under Dir/pki. Everything is generated in-process. The
// certificates come from package pki (EC P-256 roots and leaves, valid
// from pki.ClockSkew ago for pki.DefaultValidity, 24 h: a cluster lives as
// long as one test run; every component is Go and accepts them); the
// service-account signing key is RSA 2048 (the usual choice, and what
// kube-apiserver's defaults expect).
type clusterPKI struct {
	dir string

	caCert                      string // cluster CA: signs everything below except front-proxy-client
	apiserverCert, apiserverKey string
	adminCert, adminKey         string // CN=admin, O=system:masters
	fpCACert                    string // front-proxy CA (aggregation layer)
	fpClientCert, fpClientKey   string // CN=front-proxy-client
	servingCert, servingKey     string // localhost/127.0.0.1, for kwok, metrics-server, kcm, scheduler
	saKey, saPub                string // service-account token signing key pair
	tokenFile                   string // --token-auth-file

	token string // the static admin bearer token

	// PEM bytes embedded in the kubeconfig, so it stays valid if copied.
	caPEM, adminCertPEM, adminKeyPEM []byte
}

// newPKI makes the cluster's certificates; apiIPs and servingIPs are extra
// IP SANs of the apiserver's and the serving certificate (with real nodes:
// the bridge address the apiserver listens on, and every kubelet's node IP).
func newPKI(dir string, apiIPs, servingIPs []netip.Addr) (*clusterPKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &clusterPKI{dir: dir}
	path := func(name string) string { return filepath.Join(dir, name) }

	ca, err := p.newCA("meshbench-kubetest-ca", "ca")
	if err != nil {
		return nil, err
	}
	p.caCert, p.caPEM = path("ca.crt"), ca.CertPEM()
	fpCA, err := p.newCA("meshbench-kubetest-front-proxy-ca", "front-proxy-ca")
	if err != nil {
		return nil, err
	}
	p.fpCACert = path("front-proxy-ca.crt")

	serverAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	loopback := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	// 10.0.0.1 is the "kubernetes" Service's ClusterIP in
	// --service-cluster-ip-range; in-cluster clients would dial it. Nothing
	// here does (there is no kube-proxy), it only keeps the cert standard.
	apiIPs = append(append([]netip.Addr{netip.MustParseAddr("10.0.0.1")}, loopback...), apiIPs...)
	apiDNS := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if _, err := p.newLeaf(ca, "apiserver", pki.LeafSpec{Subject: pkix.Name{CommonName: "kube-apiserver"}, DNSNames: apiDNS, IPs: apiIPs, ExtKeyUsage: serverAuth}); err != nil {
		return nil, err
	}
	p.apiserverCert, p.apiserverKey = path("apiserver.crt"), path("apiserver.key")

	admin, err := p.newLeaf(ca, "admin", pki.LeafSpec{Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, ExtKeyUsage: clientAuth})
	if err != nil {
		return nil, err
	}
	p.adminCert, p.adminKey, p.adminCertPEM, p.adminKeyPEM = path("admin.crt"), path("admin.key"), admin.CertPEM(), admin.KeyPEM()

	// kube-apiserver only accepts front-proxy requests from a client cert
	// with this CN (--requestheader-allowed-names).
	if _, err := p.newLeaf(fpCA, "front-proxy-client", pki.LeafSpec{Subject: pkix.Name{CommonName: "front-proxy-client"}, ExtKeyUsage: clientAuth}); err != nil {
		return nil, err
	}
	p.fpClientCert, p.fpClientKey = path("front-proxy-client.crt"), path("front-proxy-client.key")

	// One serving cert for everything else that listens: kwok (the
	// apiserver verifies it when it fetches pod logs), metrics-server, and
	// kcm/scheduler (given a cert they do not write self-signed ones into
	// the shared /var/run/kubernetes, which would race between clusters).
	// The aggregator checks metrics-server's cert against the APIService's
	// caBundle with ServerName SERVICE.NAMESPACE.svc, hence that SAN.
	servingDNS := []string{"localhost", metricsServiceName + "." + metricsServiceNamespace + ".svc"}
	if _, err := p.newLeaf(ca, "serving", pki.LeafSpec{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: servingDNS, IPs: append(slices.Clone(loopback), servingIPs...), ExtKeyUsage: serverAuth}); err != nil {
		return nil, err
	}
	p.servingCert, p.servingKey = path("serving.crt"), path("serving.key")

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p.saKey, p.saPub = path("sa.key"), path("sa.pub")
	if err := writePEM(p.saKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return nil, err
	}
	if err := writePEM(p.saPub, "PUBLIC KEY", pubDER); err != nil {
		return nil, err
	}

	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	p.token = hex.EncodeToString(tok)
	p.tokenFile = path("tokens.csv")
	// token,user,uid,"group1,group2"
	line := fmt.Sprintf("%s,admin-token,admin-token-uid,\"system:masters\"\n", p.token)
	if err := os.WriteFile(p.tokenFile, []byte(line), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// newCA makes a root CA named cn and writes its certificate to NAME.crt.
// Its key is never written: only newPKI signs with it (no component is
// given --cluster-signing-key-file).
func (p *clusterPKI) newCA(cn, name string) (*pki.CA, error) {
	ca, err := pki.NewRootCA(pkix.Name{CommonName: cn}, pki.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	return ca, os.WriteFile(filepath.Join(p.dir, name+".crt"), ca.CertPEM(), 0o600)
}

// newLeaf writes NAME.crt and NAME.key (PKCS #8), signed by ca.
func (p *clusterPKI) newLeaf(ca *pki.CA, name string, spec pki.LeafSpec) (*pki.Workload, error) {
	w, err := ca.IssueLeaf(spec, pki.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating %s certificate: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, name+".key"), w.KeyPEM(), 0o600); err != nil {
		return nil, err
	}
	return w, os.WriteFile(filepath.Join(p.dir, name+".crt"), w.CertPEM(), 0o600)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// Context names in the kubeconfig written by writeKubeconfig.
const (
	// ContextCert authenticates with the admin client certificate.
	ContextCert = "test"
	// ContextToken authenticates with the static bearer token.
	ContextToken = "test-token"
)

// writeKubeconfig writes a self-contained kubeconfig (certificates embedded)
// with the contexts ContextCert (current) and ContextToken.
func (p *clusterPKI) writeKubeconfig(path, server string) error {
	b64 := base64.StdEncoding.EncodeToString
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
- name: admin-token
  user:
    token: %s
contexts:
- name: %s
  context: {cluster: test, user: admin}
- name: %s
  context: {cluster: test, user: admin-token}
current-context: %s
`, server, b64(p.caPEM), b64(p.adminCertPEM), b64(p.adminKeyPEM), p.token,
		ContextCert, ContextToken, ContextCert)
	return os.WriteFile(path, []byte(cfg), 0o600)
}
