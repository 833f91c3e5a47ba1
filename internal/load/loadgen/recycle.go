package loadgen

import (
	"context"
	"time"
)

// recycled closes its connection after every `every` requests, so the
// next request opens a new one (Config.RequestsPerConnection). An HTTP/1.1
// connection of one request is not wrapped: it asks the server to close
// (Connection: close) as keep-alive false does.
type recycled struct {
	conn
	every, used int
}

// recycle wraps c to close after every n requests; n 0 keeps c as it is,
// and so does n 1 for HTTP/1.1 (built without keep-alive).
func recycle(c conn, n int) conn {
	if h, ok := c.(*http1Conn); n == 0 || (n == 1 && ok && !h.keepAlive) {
		return c
	}
	return &recycled{conn: c, every: n}
}

func (r *recycled) Do(ctx context.Context, deadline time.Time) Outcome {
	out := r.conn.Do(ctx, deadline)
	r.used++
	if r.used >= r.every || out.Err != nil {
		// A failed request already dropped its connection: the count
		// starts again with the next one.
		_ = r.conn.Close()
		r.used = 0
	}
	return out
}
