package loadgen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error kinds every failed request is classified into.
const (
	KindTimeout  = "timeout"  // no answer before --timeout
	KindRefused  = "refused"  // connection refused
	KindReset    = "reset"    // connection reset by peer
	KindClosed   = "closed"   // peer closed the connection mid-exchange (EOF)
	KindTLS      = "tls"      // TLS handshake or certificate failure
	KindDNS      = "dns"      // name resolution failure
	KindProtocol = "protocol" // malformed answer (bad HTTP, short TCP echo)
	KindGRPC     = "grpc"     // gRPC call failed with a non-OK status
	KindLocal    = "local"    // the load generator's own failure (out of file descriptors), never the target's
	KindStatus   = "status"   // an HTTP answer with an error status (1xx final, 4xx, 5xx)
	KindOther    = "other"    // anything else
)

// ClassifyError maps a transport error to one of the Kind constants.
func ClassifyError(err error) string {
	if err == nil {
		return ""
	}
	var pe *protocolError
	if errors.As(err, &pe) {
		return KindProtocol
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.OK {
		switch s.Code() {
		case codes.DeadlineExceeded:
			return KindTimeout
		case codes.Unavailable:
			msg := s.Message()
			switch {
			case strings.Contains(msg, "connection refused"):
				return KindRefused
			case strings.Contains(msg, "connection reset"):
				return KindReset
			case strings.Contains(msg, "tls:") || strings.Contains(msg, "x509"):
				return KindTLS
			}
		}
		return KindGRPC
	}
	var (
		certErr  *tls.CertificateVerificationError
		alertErr tls.AlertError
		recErr   tls.RecordHeaderError
		unkAuth  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		dnsErr   *net.DNSError
		netErr   net.Error
	)
	switch {
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE), errors.Is(err, syscall.ENOBUFS),
		errors.Is(err, syscall.EADDRNOTAVAIL):
		return KindLocal
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return KindReset
	case errors.As(err, &certErr), errors.As(err, &alertErr), errors.As(err, &recErr),
		errors.As(err, &unkAuth), errors.As(err, &hostErr):
		return KindTLS
	case errors.As(err, &dnsErr):
		return KindDNS
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return KindTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return KindClosed
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "tls:"), strings.Contains(msg, "x509:"):
		return KindTLS
	case strings.Contains(msg, "connection reset"):
		return KindReset
	case strings.Contains(msg, "connection refused"):
		return KindRefused
	case strings.Contains(msg, "too many open files"):
		return KindLocal
	}
	return KindOther
}

// protocolError is a malformed answer from the peer.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }
