package loadgen

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles names the client's TLS material. All fields are optional: with
// none, the system roots verify the server.
type TLSFiles struct {
	CAFile     string // PEM bundle of CAs that verify the server
	CertFile   string // PEM client certificate (mTLS); needs KeyFile
	KeyFile    string // PEM private key of CertFile
	ServerName string // override the name verified (and sent as SNI)
	Insecure   bool   // skip server verification (never the default)
}

// Config builds the client TLS configuration (TLS 1.2 minimum), returning
// every problem with the files at once.
func (f TLSFiles) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName, InsecureSkipVerify: f.Insecure}
	var errs []error
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--cacert %s: %w", f.CAFile, unwrapPath(err)))
		} else {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("--cacert %s: no PEM certificate found; allowed: a PEM file with one or more CERTIFICATE blocks", f.CAFile))
			}
			cfg.RootCAs = pool
		}
	}
	switch {
	case f.CertFile != "" && f.KeyFile == "":
		errs = append(errs, fmt.Errorf("--cert %s given without --key: a client certificate needs its private key", f.CertFile))
	case f.CertFile == "" && f.KeyFile != "":
		errs = append(errs, fmt.Errorf("--key %s given without --cert: a private key needs its client certificate", f.KeyFile))
	case f.CertFile != "":
		_, errC := os.Stat(f.CertFile)
		_, errK := os.Stat(f.KeyFile)
		if errC != nil {
			errs = append(errs, fmt.Errorf("--cert %s: %w", f.CertFile, unwrapPath(errC)))
		}
		if errK != nil {
			errs = append(errs, fmt.Errorf("--key %s: %w", f.KeyFile, unwrapPath(errK)))
		}
		if errC == nil && errK == nil {
			pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("--cert %s / --key %s: %v; allowed: a PEM certificate and its matching PEM private key", f.CertFile, f.KeyFile, err))
			} else {
				cfg.Certificates = []tls.Certificate{pair}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
