package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/sys/process"
)

// ServePodLogs makes `kubectl logs` (the pods/log API) return contents for
// the container of the pod. kwok has no containers; its kwok.x-k8s.io Logs
// object for the pod points at a file, and kwok's kubelet endpoint, which
// the apiserver proxies pods/log to, reads that file. The pod need not
// exist yet, but the API serves its logs only once it is bound to a node.
//
// Calling it again for the same container replaces the contents; other
// containers of the pod keep theirs. It returns once kwok serves the new
// contents.
func (c *Cluster) ServePodLogs(ctx context.Context, namespace, pod, container, contents string) error {
	key := namespace + "/" + pod
	dir := filepath.Join(c.Dir, "podlogs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s_%s_%s.log", namespace, pod, container))
	// Write a new file and rename it, so a concurrent reader sees the old
	// or the new contents, never half of them.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, criLog(contents, time.Now()), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}

	c.mu.Lock()
	if c.podLogs[key] == nil {
		c.podLogs[key] = map[string]string{}
	}
	c.podLogs[key][container] = path
	var entries []any
	for _, name := range slices.Sorted(maps.Keys(c.podLogs[key])) {
		entries = append(entries, map[string]any{"containers": []string{name}, "logsFile": c.podLogs[key][name]})
	}
	c.mu.Unlock()

	// The Logs object is named after the pod, in the pod's namespace.
	obj, err := json.Marshal(map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
		"metadata": map[string]any{"name": pod, "namespace": namespace},
		"spec":     map[string]any{"logs": entries},
	})
	if err != nil {
		return err
	}
	if _, err := c.KubectlStdin(ctx, obj, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("creating the kwok Logs object for %s container %s: %w", key, container, err)
	}
	return c.waitKwokLogs(ctx, namespace, pod, container, contents)
}

// waitKwokLogs asks kwok's kubelet endpoint directly (which needs no pod)
// until it serves contents: kwok picks the Logs object up through a watch.
func (c *Cluster) waitKwokLogs(ctx context.Context, namespace, pod, container, contents string) error {
	u := fmt.Sprintf("https://%s/containerLogs/%s/%s/%s", c.kwokHostPort(),
		url.PathEscape(namespace), url.PathEscape(pod), url.PathEscape(container))
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		body, err := c.apiRequest(rctx, http.MethodGet, u, nil, http.StatusOK)
		rcancel()
		if err == nil && string(body) == contents {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("old contents %q", truncate(string(body), 200))
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kwok does not serve the logs of %s/%s container %s: %w (last answer: %v)\n--- last lines of the kwok log ---\n%s",
				namespace, pod, container, ctx.Err(), last, process.TailLog(c.LogFile("kwok"), 15))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// criLog renders contents in the CRI log format that kwok (like the
// kubelet) reads: "TIMESTAMP stdout F LINE" per line, with tag P (partial)
// for a last line without a newline, so the contents come back byte for
// byte.
func criLog(contents string, ts time.Time) []byte {
	var b strings.Builder
	stamp := ts.UTC().Format(time.RFC3339Nano)
	for contents != "" {
		line, rest, found := strings.Cut(contents, "\n")
		tag := "F"
		if !found {
			tag = "P"
		}
		fmt.Fprintf(&b, "%s stdout %s %s\n", stamp, tag, line)
		contents = rest
	}
	return []byte(b.String())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
