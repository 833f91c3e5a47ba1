package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// http1Conn is meshbench's own HTTP/1.1 client for one keep-alive
// connection. It writes a pre-serialised request and parses the response
// with one buffered reader: no goroutines per connection and no allocation
// per request, which is what keeps the generator's CPU cost below its peers'
// (net/http's client runs two goroutines per connection and hands every
// request across them).
type http1Conn struct {
	t         Target
	dialer    *net.Dialer
	tlsConfig *tls.Config
	req       []byte // the whole request, serialised once
	bodyLen   int64
	head      bool // HEAD: responses carry no body
	keepAlive bool
	spec      RequestSpec
	// idPrefix, when set, is Config.RequestIDs: req carries an
	// X-Request-Id whose number's hex digits start at req[idAt].
	idPrefix string
	idAt     int

	conn net.Conn
	rw   io.ReadWriter // conn, or raw for plain TCP
	raw  *rawIO        // plain TCP: raw system calls (see rawIO); nil over TLS
	br   *bufio.Reader
	// lazy, when set, lets a plain-TCP connection read its answers at the
	// pacer's wake-ups (see harvest); wake is its channel for that.
	lazy *harvest
	wake chan struct{}
	abortable
}

func newHTTP1Conn(t Target, spec RequestSpec, tlsConfig *tls.Config, keepAlive bool) *http1Conn {
	if t.TLS {
		tlsConfig = clientTLS(tlsConfig, t, "http/1.1")
	}
	return &http1Conn{
		t: t, dialer: &net.Dialer{}, tlsConfig: tlsConfig,
		req: serializeHTTP1(t, spec, keepAlive), bodyLen: int64(len(spec.Body)),
		head: spec.Method == http.MethodHead, keepAlive: keepAlive, spec: spec,
	}
}

// serializeHTTP1 renders the request once. Header order is sorted so the
// bytes on the wire are stable.
func serializeHTTP1(t Target, spec RequestSpec, keepAlive bool) []byte {
	var b bytes.Buffer
	method := spec.Method
	if method == "" {
		method = http.MethodGet
	}
	b.WriteString(method + " " + t.Path + " HTTP/1.1\r\n")
	host := spec.Host
	if host == "" {
		host = t.Addr
		if p, err := strconv.Atoi(portOf(t.Addr)); err == nil && ((!t.TLS && p == 80) || (t.TLS && p == 443)) {
			host = t.Host
		}
	}
	b.WriteString("Host: " + host + "\r\n")
	hasUA := false
	keys := make([]string, 0, len(spec.Headers))
	for k := range spec.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if http.CanonicalHeaderKey(k) == "User-Agent" {
			hasUA = true
		}
		for _, v := range spec.Headers[k] {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	if !hasUA {
		b.WriteString("User-Agent: meshbench\r\n")
	}
	if len(spec.Body) > 0 || (method != http.MethodGet && method != http.MethodHead) {
		b.WriteString("Content-Length: " + strconv.Itoa(len(spec.Body)) + "\r\n")
	}
	if !keepAlive {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(spec.Body)
	return b.Bytes()
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func (c *http1Conn) dial(ctx context.Context) error {
	conn, err := c.dialer.DialContext(ctx, "tcp", c.t.Addr)
	if err != nil {
		return err
	}
	c.rw, c.raw = conn, nil
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		if !c.t.TLS {
			if c.raw = newRawIO(tc); c.raw != nil {
				c.rw = c.raw
				if c.lazy != nil {
					c.raw.useHarvest(c.lazy, c.wake)
				}
			}
		}
	}
	if c.t.TLS {
		tc := tls.Client(conn, c.tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return err
		}
		conn = tc
		c.rw = tc
	}
	c.conn = conn
	c.watch(conn)
	if c.br == nil {
		c.br = bufio.NewReaderSize(c.rw, 16<<10)
	} else {
		c.br.Reset(c.rw)
	}
	return nil
}

// useHarvest lets the connection read its answers at the pacer's
// wake-ups while h is on (plain TCP only; see harvest).
func (c *http1Conn) useHarvest(h *harvest) {
	c.lazy, c.wake = h, make(chan struct{}, 1)
}

// Do sends one request and reads its response before deadline; Abort (the
// run cancelled) cuts it short at once.
func (c *http1Conn) Do(ctx context.Context, deadline time.Time) Outcome {
	if c.aborted() {
		return Outcome{Err: context.Canceled}
	}
	reused := c.conn != nil
	if c.conn == nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		err := c.dial(dctx)
		cancel()
		if err != nil {
			return Outcome{Err: err}
		}
	}
	out := c.roundTrip(deadline)
	if out.Err != nil && reused && out.retryable {
		// A keep-alive connection the server had already closed: redial once,
		// as every HTTP client does.
		c.Close()
		dctx, cancel := context.WithDeadline(ctx, deadline)
		err := c.dial(dctx)
		cancel()
		if err != nil {
			return Outcome{Err: err}
		}
		out = c.roundTrip(deadline)
	}
	if out.Err != nil || out.closeAfter || !c.keepAlive {
		c.Close()
	}
	return out.Outcome
}

type http1Outcome struct {
	Outcome
	closeAfter bool // server asked to close, or body delimited by EOF
	retryable  bool // failed before any response byte on a reused connection
}

func (c *http1Conn) roundTrip(deadline time.Time) http1Outcome {
	_ = c.conn.SetDeadline(deadline)
	if c.aborted() { // Abort ran before this deadline replaced its own
		return http1Outcome{Outcome: Outcome{Err: context.Canceled}}
	}
	if c.raw != nil {
		// Written by the first read, inside its wait (see rawIO).
		c.raw.queue(c.req)
	} else if _, err := c.rw.Write(c.req); err != nil {
		return http1Outcome{Outcome: Outcome{Err: err}, retryable: true}
	}
	for {
		resp, err := readHTTP1Response(c.br, c.head)
		if err != nil {
			if c.raw != nil && c.raw.writeFailed() {
				return http1Outcome{Outcome: Outcome{Err: err}, retryable: true}
			}
			retry := !resp.firstByteRead && isEOFOrReset(err)
			return http1Outcome{Outcome: Outcome{Err: err, BytesOut: c.bodyLen}, retryable: retry}
		}
		if resp.status >= 100 && resp.status < 200 && resp.status != 101 {
			continue // interim response (100 Continue, 103 Early Hints)
		}
		out := Outcome{Code: resp.status, BytesIn: resp.bodyBytes, BytesOut: c.bodyLen}
		if c.raw != nil {
			out.arrivedUnixNs = c.raw.arrival()
		}
		return http1Outcome{Outcome: out, closeAfter: resp.close}
	}
}

// Close drops the connection; the next Do dials again.
func (c *http1Conn) Close() error {
	if c.conn == nil {
		return nil
	}
	c.watch(nil)
	err := c.conn.Close()
	c.conn = nil
	return err
}

func isEOFOrReset(err error) bool {
	k := ClassifyError(err)
	return k == KindClosed || k == KindReset
}

// http1Response is what the parser learned of one response.
type http1Response struct {
	status        int
	bodyBytes     int64
	close         bool
	firstByteRead bool
}

// maxHeaderBytes bounds the response head meshbench accepts.
const maxHeaderBytes = 64 << 10

// readHTTP1Response parses one response from br and consumes its body.
// head tells that the request was HEAD (no body follows).
func readHTTP1Response(br *bufio.Reader, head bool) (http1Response, error) {
	var r http1Response
	line, err := readLine(br)
	if err != nil {
		return r, err
	}
	r.firstByteRead = true
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return r, &protocolError{msg: "malformed HTTP status line " + strconv.Quote(truncate(line, 40))}
	}
	minor := line[7]
	code, ok := parse3Digits(line[9:12])
	if !ok || (len(line) > 12 && line[12] != ' ') {
		return r, &protocolError{msg: "malformed HTTP status code in " + strconv.Quote(truncate(line, 40))}
	}
	r.status = code
	r.close = minor == '0'
	contentLength := int64(-1)
	chunked, transferEncoding := false, false
	headerBytes := len(line)
	for {
		line, err = readLine(br)
		if err != nil {
			return r, unexpected(err)
		}
		headerBytes += len(line)
		if headerBytes > maxHeaderBytes {
			return r, &protocolError{msg: "HTTP response head larger than 64 KiB"}
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return r, &protocolError{msg: "malformed HTTP header line " + strconv.Quote(truncate(line, 40))}
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (contentLength >= 0 && n != contentLength) {
				return r, &protocolError{msg: "bad Content-Length " + strconv.Quote(truncate(value, 40))}
			}
			contentLength = n
		case asciiEqualFold(name, "transfer-encoding"):
			transferEncoding = true
			if asciiEqualFold(lastToken(value), "chunked") {
				chunked = true
			}
		case asciiEqualFold(name, "connection"):
			if asciiContainsTokenFold(value, "close") {
				r.close = true
			} else if asciiContainsTokenFold(value, "keep-alive") && minor == '0' {
				r.close = false
			}
		}
	}
	if head || code == 204 || code == 304 || (code >= 100 && code < 200) {
		return r, nil
	}
	if transferEncoding && minor == '0' {
		// RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has
		// faulty framing, even with a Content-Length, and the connection
		// is closed after it. meshbench's choice: ignore both headers and
		// take the body as delimited by the end of the connection (what
		// an HTTP/1.0 body without a length is), then close; net/http
		// also ignores Transfer-Encoding in HTTP/1.0.
		chunked, contentLength = false, -1
	}
	switch {
	case chunked:
		n, err := readChunked(br)
		r.bodyBytes = n
		return r, err
	case contentLength >= 0:
		n, err := br.Discard(int(min(contentLength, int64(^uint(0)>>1))))
		r.bodyBytes = int64(n)
		if err != nil {
			return r, unexpected(err)
		}
		return r, nil
	default:
		// Body delimited by the end of the connection.
		n, err := io.Copy(io.Discard, br)
		r.bodyBytes = n
		r.close = true
		return r, err
	}
}

// readChunked consumes a chunked body and returns its decoded size.
func readChunked(br *bufio.Reader) (int64, error) {
	var total int64
	for {
		line, err := readLine(br)
		if err != nil {
			return total, unexpected(err)
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimSpace(line)
		size, err := strconv.ParseInt(string(line), 16, 64)
		if err != nil || size < 0 || len(line) > 16 {
			return total, &protocolError{msg: "bad chunk size " + strconv.Quote(truncate(line, 20))}
		}
		if size == 0 {
			// Trailers until an empty line.
			for {
				line, err := readLine(br)
				if err != nil {
					return total, unexpected(err)
				}
				if len(line) == 0 {
					return total, nil
				}
			}
		}
		n, err := br.Discard(int(size))
		total += int64(n)
		if err != nil {
			return total, unexpected(err)
		}
		crlf, err := readLine(br)
		if err != nil {
			return total, unexpected(err)
		}
		if len(crlf) != 0 {
			return total, &protocolError{msg: "missing CRLF after chunk"}
		}
	}
}

// readLine returns one line without its CRLF (or LF). The slice is valid
// until the next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, &protocolError{msg: "HTTP line longer than 16 KiB"}
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func parse3Digits(b []byte) (int, bool) {
	if len(b) != 3 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n >= 100
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func lastToken(v []byte) []byte {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return bytes.TrimSpace(v)
}

func asciiContainsTokenFold(v []byte, tok string) bool {
	for len(v) > 0 {
		part := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			part, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		if asciiEqualFold(bytes.TrimSpace(part), tok) {
			return true
		}
	}
	return false
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
