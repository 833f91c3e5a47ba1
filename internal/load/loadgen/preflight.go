package loadgen

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// Preflight opens one connection to each target (with a TLS handshake for
// TLS targets) so an unreachable target or a certificate problem is reported
// in one line before any load is sent.
func Preflight(ctx context.Context, targets []Target, tlsConfig *tls.Config, timeout time.Duration) error {
	seen := map[string]bool{}
	for _, t := range targets {
		if seen[t.Addr] {
			continue
		}
		seen[t.Addr] = true
		dctx, cancel := context.WithTimeout(ctx, timeout)
		var d net.Dialer
		c, err := d.DialContext(dctx, "tcp", t.Addr)
		if err == nil && t.TLS {
			cfg := tlsConfig.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName = t.Host
			}
			switch t.Protocol {
			case HTTP2, GRPC:
				cfg.NextProtos = []string{"h2"}
			default:
				cfg.NextProtos = []string{"http/1.1"}
			}
			tc := tls.Client(c, cfg)
			err = tc.HandshakeContext(dctx)
			c = tc
		}
		cancel()
		if c != nil {
			c.Close()
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("target %s unreachable (%s): %s", t.Raw, ClassifyError(err), normalizeError(err))
		}
	}
	return nil
}
