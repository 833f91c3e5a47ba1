package linkerd

import (
	"slices"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
)

// TestPlaintext names every proxy and direction that carried plaintext.
func TestPlaintext(t *testing.T) {
	tests := []struct {
		name  string
		stats map[string]proxy.Stats
		want  []string
	}{
		// all over mTLS
		{"clean", map[string]proxy.Stats{"a": {OutboundTLS: 5}, "b": {InboundTLS: 5}}, nil},
		// a plaintext caller reached b, and a sent one request in plaintext
		{"both", map[string]proxy.Stats{"a": {OutboundTLS: 5, OutboundPlain: 1}, "b": {InboundTLS: 5, InboundPlain: 2}}, []string{"a outbound 1", "b inbound 2"}},
		// nothing at all
		{"none", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plaintext(tc.stats); !slices.Equal(got, tc.want) {
				t.Errorf("Plaintext = %v, want %v", got, tc.want)
			}
		})
	}
}
