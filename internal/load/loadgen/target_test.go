package loadgen

import (
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		raw     string
		http2   bool
		proto   Protocol
		tls     bool
		addr    string
		path    string
		wantErr string
	}{
		{"http://127.0.0.1:8080/", false, HTTP1, false, "127.0.0.1:8080", "/", ""},     // plain
		{"http://127.0.0.1", false, HTTP1, false, "127.0.0.1:80", "/", ""},             // default port, empty path
		{"https://localhost/a?b=1", false, HTTP1, true, "localhost:443", "/a?b=1", ""}, // TLS, query kept
		{"https://127.0.0.1:8443/", true, HTTP2, true, "127.0.0.1:8443", "/", ""},      // --http2 over TLS
		{"http://127.0.0.1:8080/", true, HTTP2, false, "127.0.0.1:8080", "/", ""},      // --http2 on http = h2c
		{"h2c://127.0.0.1:8080/x", false, HTTP2, false, "127.0.0.1:8080", "/x", ""},    // h2c scheme
		{"grpc://127.0.0.1:50051", false, GRPC, false, "127.0.0.1:50051", "/", ""},     // grpc
		{"grpcs://127.0.0.1", false, GRPC, true, "127.0.0.1:443", "/", ""},             // grpc over TLS
		{"tcp://127.0.0.1:9000", false, TCP, false, "127.0.0.1:9000", "/", ""},         // tcp
		{"HTTP://127.0.0.1:1/", false, HTTP1, false, "127.0.0.1:1", "/", ""},           // scheme is case-insensitive
		{"http://[::1]:8080/", false, HTTP1, false, "[::1]:8080", "/", ""},             // IPv6 loopback
		{"tcp://127.0.0.1", false, "", false, "", "", "needs a port"},                  // tcp without port
		{"ftp://127.0.0.1/", false, "", false, "", "", `unknown scheme "ftp"`},         // unknown scheme
		{"127.0.0.1:8080", false, "", false, "", "", "allowed schemes"},                // no scheme
		{"http://", false, "", false, "", "", "not a URL"},                             // no host
		{"", false, "", false, "", "", "not a URL"},                                    // empty
		{"http://127.0.0.1:8080/%zz", false, "", false, "", "", "not a URL"},           // bad escape
	}
	for _, tt := range tests {
		got, err := ParseTarget(tt.raw, tt.http2)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseTarget(%q) error %v, want %q", tt.raw, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tt.raw, err)
			continue
		}
		if got.Protocol != tt.proto || got.TLS != tt.tls || got.Addr != tt.addr || got.Path != tt.path {
			t.Errorf("ParseTarget(%q) = %+v", tt.raw, got)
		}
	}
}

// FuzzParseTarget: never panics; anything accepted has a dialable address
// and an absolute path.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8080/", "grpc://x:1", "tcp://127.0.0.1:9", "h2c://[::1]/a?b", "https://h/%41", "x://y"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, http2 bool) {
		tg, err := ParseTarget(raw, http2)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error for one input: %q", err)
			}
			return
		}
		if tg.Addr == "" || !strings.HasPrefix(tg.Path, "/") || tg.Protocol == "" {
			t.Fatalf("ParseTarget(%q) accepted %+v", raw, tg)
		}
	})
}
