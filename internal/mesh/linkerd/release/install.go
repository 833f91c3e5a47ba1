package release

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/meshbench/meshbench/internal/sys/pki"
)

// Certs are the files `linkerd install` takes the mesh's identity from:
// the trust anchor (the root every proxy trusts) and the identity issuer
// (an intermediate CA signed by it, with its key), PEM, in one directory
// under the names Linkerd's docs and mkcerts.sh give them.
type Certs struct {
	Dir string
	// Made is true when meshbench made them (MakeCerts), false for a
	// user's (ReadCerts).
	Made bool
}

// The files of a Certs directory.
const (
	TrustAnchorFile = "ca.crt"
	IssuerCertFile  = "issuer.crt"
	IssuerKeyFile   = "issuer.key"
)

// CertValidity is how long the certificates MakeCerts makes stay valid:
// past the 60 days `linkerd check` warns under, for an install kept
// between plans.
const CertValidity = 365 * 24 * time.Hour

// Path is the path of one of the files.
func (c Certs) Path(name string) string { return filepath.Join(c.Dir, name) }

// MakeCerts makes a trust anchor (CN root.linkerd.cluster.local, path
// length 1) and an identity issuer signed by it (CN
// identity.linkerd.cluster.local, path length 0), EC P-256, valid for
// CertValidity, with meshbench's CA code (package pki), and writes them
// into dir (created 0700; the key 0600).
func MakeCerts(dir string) (Certs, error) {
	anchor, err := pki.NewTrustAnchor(pkix.Name{CommonName: "root.linkerd.cluster.local"}, pki.Options{Validity: CertValidity})
	if err != nil {
		return Certs{}, err
	}
	issuer, err := anchor.IssueIntermediate(pkix.Name{CommonName: "identity.linkerd.cluster.local"}, pki.Options{Validity: CertValidity})
	if err != nil {
		return Certs{}, err
	}
	files, err := issuer.WriteFiles(dir)
	if err != nil {
		return Certs{}, err
	}
	c := Certs{Dir: dir, Made: true}
	if err := errors.Join(os.Rename(files.Cert, c.Path(IssuerCertFile)), os.Rename(files.Key, c.Path(IssuerKeyFile)),
		os.WriteFile(c.Path(TrustAnchorFile), anchor.CertPEM(), pki.CertFileMode)); err != nil {
		return Certs{}, fmt.Errorf("writing Linkerd's certificates into %s: %w", dir, err)
	}
	return c, nil
}

// ReadCerts checks a user's certificate directory: the three files are
// there, the issuer is a CA and verifies against the trust anchor. The
// error names the directory and what is wrong.
func ReadCerts(dir string) (Certs, error) {
	c := Certs{Dir: dir}
	read := func(name string) (*x509.Certificate, error) {
		data, err := os.ReadFile(c.Path(name))
		if err != nil {
			return nil, err
		}
		b, _ := pem.Decode(data)
		if b == nil || b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s: not a PEM certificate", c.Path(name))
		}
		return x509.ParseCertificate(b.Bytes)
	}
	anchor, err := read(TrustAnchorFile)
	if err != nil {
		return Certs{}, fmt.Errorf("linkerd certificates %s: %w (want %s, %s, %s as mkcerts.sh makes them)", dir, err, TrustAnchorFile, IssuerCertFile, IssuerKeyFile)
	}
	issuer, err := read(IssuerCertFile)
	if err != nil {
		return Certs{}, fmt.Errorf("linkerd certificates %s: %w", dir, err)
	}
	if _, err := os.Stat(c.Path(IssuerKeyFile)); err != nil {
		return Certs{}, fmt.Errorf("linkerd certificates %s: %w", dir, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(anchor)
	if !issuer.IsCA {
		return Certs{}, fmt.Errorf("linkerd certificates %s: %s is not a CA certificate", dir, IssuerCertFile)
	}
	if _, err := issuer.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return Certs{}, fmt.Errorf("linkerd certificates %s: %s does not verify against %s: %w", dir, IssuerCertFile, TrustAnchorFile, err)
	}
	return c, nil
}

// InstallSettings are the `linkerd install` settings of an install of
// the images Images built, each with why (the flags that name the
// certificates come from InstallArgs).
var InstallSettings = []struct{ Set, Why string }{
	{"imagePullPolicy=Never", "the images are imported into the nodes, never pulled"},
	{"disableHeartBeat=true", "no heartbeat CronJob: it would call versioncheck.linkerd.io"},
	{"proxyInit.runAsRoot=true", "linkerd-init as root: meshbench's image builder sets no file capabilities (upstream's image setcaps iptables and proxy-init so uid 65534 may run them)"},
}

// InstallArgs are what `linkerd install` gets besides the cluster: the
// identity (certs' files), the images (HUB/controller and HUB/proxy, tag
// TAG: "" for DefaultHub and Version) and InstallSettings.
func InstallArgs(hub, tag string, c Certs) []string {
	if hub == "" {
		hub = DefaultHub
	}
	args := []string{
		"--identity-trust-anchors-file", c.Path(TrustAnchorFile),
		"--identity-issuer-certificate-file", c.Path(IssuerCertFile),
		"--identity-issuer-key-file", c.Path(IssuerKeyFile),
		"--set", "controllerImage=" + hub + "/" + ImageController,
		"--set", "proxy.image.name=" + hub + "/" + ImageProxy,
	}
	if tag != "" && tag != Version {
		args = append(args, "--set", "linkerdVersion="+tag)
	}
	for _, s := range InstallSettings {
		args = append(args, "--set", s.Set)
	}
	return args
}
