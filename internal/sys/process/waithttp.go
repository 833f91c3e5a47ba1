package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// WaitHTTP polls url through hc every 100 ms until it answers 200, c
// exits (an error with c's log tail), or timeout passes (an error with
// the last answer or failure and c's log tail): a child's readiness
// endpoint, e.g. etcd's /health, kube-apiserver's /readyz, istiod's
// /ready, pilot-agent's /healthz/ready.
func (c *Child) WaitHTTP(ctx context.Context, hc *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		last = err
		select {
		case <-c.Done():
			return fmt.Errorf("%s exited: %v\n%s", c.Name, c.Err(), c.Tail(15))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v (%s: %v)\n%s", c.Name, timeout, url, last, c.Tail(15))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
