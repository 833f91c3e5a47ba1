// Package probe asks a child process's own HTTP endpoints (a proxy's
// readiness and metrics ports) the two questions meshbench asks them: is
// it ready yet, and what are its counters.
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ErrExited is returned by WaitOK when the process exited first.
var ErrExited = errors.New("exited before it was ready")

// WaitOK polls url every interval until it answers 200 (nil), ctx ends
// (ctx's error), or exited is closed (ErrExited).
func WaitOK(ctx context.Context, client *http.Client, url string, exited <-chan struct{}, interval time.Duration) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return ErrExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Get returns url's body (at most limit bytes), or an error for a failed
// request or a status other than 200.
func Get(ctx context.Context, client *http.Client, url string, limit int64) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), nil
}
