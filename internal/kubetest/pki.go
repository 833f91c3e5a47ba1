package kubetest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of the throw-away certificates and keys of one
// cluster, all under Dir/pki. Everything is generated in-process: ECDSA P-256
// for the certificates (fast to generate; every component is Go and accepts
// it), RSA 2048 for the service-account signing key (the usual choice, and
// what kube-apiserver's defaults expect).
type pki struct {
	dir string

	caCert, caKey               string // cluster CA: signs everything below except front-proxy-client
	apiserverCert, apiserverKey string
	adminCert, adminKey         string // CN=admin, O=system:masters
	fpCACert, fpCAKey           string // front-proxy CA (aggregation layer)
	fpClientCert, fpClientKey   string // CN=front-proxy-client
	servingCert, servingKey     string // localhost/127.0.0.1, for kwok, metrics-server, kcm, scheduler
	saKey, saPub                string // service-account token signing key pair
	tokenFile                   string // --token-auth-file

	token string // the static admin bearer token

	// PEM bytes embedded in the kubeconfig, so it stays valid if copied.
	caPEM, adminCertPEM, adminKeyPEM []byte
}

// certificates are valid from an hour ago (clock skew between nothing, but
// cheap insurance) for a day: a cluster lives as long as one test run.
const certValidity = 24 * time.Hour

type signer struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	path := func(name string) string { return filepath.Join(dir, name) }

	ca, caPEM, err := p.newCA("meshbench-kubetest-ca", "ca")
	if err != nil {
		return nil, err
	}
	p.caCert, p.caKey, p.caPEM = path("ca.crt"), path("ca.key"), caPEM
	fpCA, _, err := p.newCA("meshbench-kubetest-front-proxy-ca", "front-proxy-ca")
	if err != nil {
		return nil, err
	}
	p.fpCACert, p.fpCAKey = path("front-proxy-ca.crt"), path("front-proxy-ca.key")

	loopback := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	// 10.0.0.1 is the "kubernetes" Service's ClusterIP in
	// --service-cluster-ip-range; in-cluster clients would dial it. Nothing
	// here does (there is no kube-proxy), it only keeps the cert standard.
	apiIPs := append([]net.IP{net.IPv4(10, 0, 0, 1)}, loopback...)
	apiDNS := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if _, _, err := p.newLeaf(ca, "apiserver", pkix.Name{CommonName: "kube-apiserver"}, apiDNS, apiIPs, x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	p.apiserverCert, p.apiserverKey = path("apiserver.crt"), path("apiserver.key")

	adminCert, adminKey, err := p.newLeaf(ca, "admin", pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	p.adminCert, p.adminKey, p.adminCertPEM, p.adminKeyPEM = path("admin.crt"), path("admin.key"), adminCert, adminKey

	// kube-apiserver only accepts front-proxy requests from a client cert
	// with this CN (--requestheader-allowed-names).
	if _, _, err := p.newLeaf(fpCA, "front-proxy-client", pkix.Name{CommonName: "front-proxy-client"}, nil, nil, x509.ExtKeyUsageClientAuth); err != nil {
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
	if _, _, err := p.newLeaf(ca, "serving", pkix.Name{CommonName: "localhost"}, servingDNS, loopback, x509.ExtKeyUsageServerAuth); err != nil {
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

func (p *pki) newCA(cn, name string) (*signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	certPEM, err := p.writePair(name, der, key)
	if err != nil {
		return nil, nil, err
	}
	return &signer{cert: cert, key: key}, certPEM, nil
}

// newLeaf writes NAME.crt and NAME.key signed by ca and returns their PEM.
func (p *pki) newLeaf(ca *signer, name string, subj pkix.Name, dns []string, ips []net.IP, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subj,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating %s certificate: %w", name, err)
	}
	certPEM, err = p.writePair(name, der, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func (p *pki) writePair(name string, der []byte, key *ecdsa.PrivateKey) ([]byte, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := writePEM(filepath.Join(p.dir, name+".key"), "EC PRIVATE KEY", keyDER); err != nil {
		return nil, err
	}
	if err := writePEM(filepath.Join(p.dir, name+".crt"), "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
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
func (p *pki) writeKubeconfig(path, server string) error {
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
