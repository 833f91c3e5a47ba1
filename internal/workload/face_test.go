package workload

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func startT(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

// TestFaceCallsBothBackends: one request to face makes one HTTP call to
// smiley and one gRPC call to color, real servers all three.
func TestFaceCallsBothBackends(t *testing.T) {
	smiley := startT(t, Config{Kind: KindStatic})
	color := startT(t, Config{Kind: KindGRPC})
	face := startT(t, Config{Kind: KindFace, SmileyURL: "http://" + smiley.Addr() + "/", ColorAddr: color.Addr()})
	for i := 0; i < 5; i++ {
		resp, err := http.Get("http://" + face.Addr() + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"smiley_bytes":615,"color_bytes":7}` {
			t.Fatalf("face answered %d %q", resp.StatusCode, body)
		}
	}
	// A backend that is gone makes face answer 502, naming it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	color.Shutdown(ctx)
	resp, err := http.Get("http://" + face.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "face: color:") {
		t.Fatalf("without color: %d %q", resp.StatusCode, body)
	}
}

func TestFaceConfigValidation(t *testing.T) {
	err := Config{Kind: KindFace, SmileyURL: "ftp://x", ColorAddr: "nope"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "smiley-url") || !strings.Contains(err.Error(), "color-addr") {
		t.Fatalf("Validate = %v, want both backends reported", err)
	}
}
