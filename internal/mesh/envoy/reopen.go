package envoy

import (
	"context"
	"net/http"
)

// ReopenLogs makes Envoy write out its buffered access logs (POST
// /reopen_logs; checked on Envoy 1.40: the buffered records are written
// to the file at the log's path, reopened in append mode). Envoy
// otherwise flushes access logs every 10 s (--file-flush-interval-msec)
// and at exit. The write happens on Envoy's flush thread just after the
// answer: wait for the file to stop growing before reading it.
func ReopenLogs(ctx context.Context, adminAddr string) error {
	_, err := adminDo(ctx, http.MethodPost, adminAddr, "/reopen_logs")
	return err
}
