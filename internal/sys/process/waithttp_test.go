package process

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitHTTP: a real child and a real server. Ready once the server
// answers 200 (after two 503s); an error naming the child and its log's
// tail when it exits first; a timeout error with the last answer.
func TestWaitHTTP(t *testing.T) {
	dir := t.TempDir()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	alive, err := StartLogged("alive", dir, exec.Command("sh", "-c", "echo up; sleep 30"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer alive.Stop(time.Second)
	if err := alive.WaitHTTP(context.Background(), srv.Client(), srv.URL, 10*time.Second); err != nil {
		t.Fatalf("ready server: %v", err)
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("asked %d times, want 3 (two 503s, then 200)", n)
	}

	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer never.Close()
	err = alive.WaitHTTP(context.Background(), never.Client(), never.URL, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "alive not ready after 300ms") || !strings.Contains(err.Error(), "503 Service Unavailable") {
		t.Errorf("never ready: %v", err)
	}

	dying, err := StartLogged("dying", dir, exec.Command("sh", "-c", "echo bad config; exit 1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = dying.WaitHTTP(context.Background(), never.Client(), never.URL, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "dying exited") || !strings.Contains(err.Error(), "bad config") {
		t.Errorf("exited child: %v", err)
	}
}
