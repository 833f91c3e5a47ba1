package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitOK against a real server: not ready twice, then ready; a process
// that exits ends the wait; so does the context.
func TestWaitOK(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if err := WaitOK(context.Background(), srv.Client(), srv.URL, nil, time.Millisecond); err != nil || calls.Load() != 3 {
		t.Errorf("ready after 3 calls: err %v, %d calls", err, calls.Load())
	}

	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer never.Close()
	exited := make(chan struct{})
	close(exited)
	if err := WaitOK(context.Background(), never.Client(), never.URL, exited, time.Millisecond); !errors.Is(err, ErrExited) {
		t.Errorf("exited process: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := WaitOK(ctx, never.Client(), never.URL, nil, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ended context: %v", err)
	}
}

// TestGet: the body up to the limit; another status is an error naming it.
func TestGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("counter_total 42\n"))
	}))
	defer srv.Close()
	if got, err := Get(context.Background(), srv.Client(), srv.URL+"/metrics", 1<<20); err != nil || got != "counter_total 42\n" {
		t.Errorf("got %q, %v", got, err)
	}
	if got, _ := Get(context.Background(), srv.Client(), srv.URL+"/metrics", 7); got != "counter" {
		t.Errorf("limit 7: %q", got)
	}
	if _, err := Get(context.Background(), srv.Client(), srv.URL+"/missing", 1<<20); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
}
