package loadgen

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Protocol is the wire protocol used for a target.
type Protocol string

// Protocols meshbench speaks.
const (
	HTTP1 Protocol = "http/1.1" // http:// and https://
	HTTP2 Protocol = "h2"       // h2c:// (cleartext, prior knowledge) and https:// with --http2
	GRPC  Protocol = "grpc"     // grpc:// (cleartext) and grpcs:// (TLS): unary calls
	TCP   Protocol = "tcp"      // tcp://: fixed-size request/response over raw TCP
)

// Target is one parsed destination. Several targets are spread over the
// connections round-robin.
type Target struct {
	Raw      string   // as given by the user
	Protocol Protocol // wire protocol
	TLS      bool     // whether the connection is TLS
	Addr     string   // host:port to dial
	Host     string   // Host header / TLS server name (host without port)
	Path     string   // request path with query, for HTTP; gRPC method otherwise
}

// SupportedSchemes lists the target URL schemes, for error messages.
const SupportedSchemes = "http://, https://, h2c://, grpc://, grpcs://, tcp://"

// ParseTarget reads a target URL. http2 forces HTTP/2 on http:// (as h2c) and
// https:// (as h2 over TLS).
func ParseTarget(raw string, http2 bool) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Target{}, fmt.Errorf("target %q: not a URL; allowed schemes: %s", raw, SupportedSchemes)
	}
	t := Target{Raw: raw, Host: u.Hostname()}
	defPort := ""
	switch strings.ToLower(u.Scheme) {
	case "http":
		t.Protocol, defPort = HTTP1, "80"
		if http2 {
			t.Protocol = HTTP2
		}
	case "https":
		t.Protocol, t.TLS, defPort = HTTP1, true, "443"
		if http2 {
			t.Protocol = HTTP2
		}
	case "h2c":
		t.Protocol, defPort = HTTP2, "80"
	case "grpc":
		t.Protocol, defPort = GRPC, "50051"
	case "grpcs":
		t.Protocol, t.TLS, defPort = GRPC, true, "443"
	case "tcp":
		t.Protocol = TCP
		if u.Port() == "" {
			return Target{}, fmt.Errorf("target %q: a tcp:// target needs a port (tcp://HOST:PORT)", raw)
		}
	default:
		return Target{}, fmt.Errorf("target %q: unknown scheme %q; allowed schemes: %s", raw, u.Scheme, SupportedSchemes)
	}
	port := u.Port()
	if port == "" {
		port = defPort
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return Target{}, fmt.Errorf("target %q: port %s: allowed: 1 to 65535", raw, port)
	}
	t.Addr = net.JoinHostPort(t.Host, port)
	t.Path = u.RequestURI()
	if u.Opaque != "" || t.Path == "" {
		t.Path = "/"
	}
	return t, nil
}
