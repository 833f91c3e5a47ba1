package loadgen

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"time"
)

// RequestIDHeader is the header that carries Config.RequestIDs: the one
// Envoy propagates and logs as %REQ(X-REQUEST-ID)%.
const RequestIDHeader = "X-Request-Id"

// requestIDDigits is the width of a request's number in its id: 16 hex
// digits, so every id of a run has one length and the HTTP/1.1 client
// writes it into its pre-serialised request in place.
const requestIDDigits = 16

var requestIDPrefixRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

// CheckRequestIDPrefix reports whether prefix may start request ids:
// letters, digits, '.', '_' and '-', 1 to 32 characters, starting with a
// letter or digit.
func CheckRequestIDPrefix(prefix string) error {
	if !requestIDPrefixRE.MatchString(prefix) {
		return fmt.Errorf("request id prefix %q: allowed: 1 to 32 letters, digits, '.', '_' or '-', starting with a letter or digit", prefix)
	}
	return nil
}

// RequestID is the id of request number n (its place in the schedule,
// warm-up included, from 0) of a run whose Config.RequestIDs is prefix:
// "PREFIX-" and n in 16 hex digits.
func RequestID(prefix string, n uint64) string {
	return fmt.Sprintf("%s-%0*x", prefix, requestIDDigits, n)
}

// RequestRecord is one request as Config.OnRequest sees it. Times are
// since the start of the run (warm-up included), on the monotonic clock.
type RequestRecord struct {
	N        uint64        // the request's number: its place in the schedule (open loop) or order of sending (closed loop)
	Measured bool          // sent within the measured window (not warm-up)
	Intended time.Duration // when it was due (closed loop: Sent)
	Sent     time.Duration // when it was written
	End      time.Duration // when its answer (or failure) was complete
	Code     int           // HTTP status, gRPC code, or 0 for a failure below the protocol
	Err      error         // nil for an answer
}

// requestIDer is a client that sends a per-request id.
type requestIDer interface {
	// useRequestIDs makes every later request carry an id of prefix.
	useRequestIDs(prefix string)
	// setRequestID sets the next request's number.
	setRequestID(n uint64)
}

const hexDigits = "0123456789abcdef"

// putHex writes n as requestIDDigits hex digits into b.
func putHex(b []byte, n uint64) {
	for i := requestIDDigits - 1; i >= 0; i-- {
		b[i] = hexDigits[n&0xf]
		n >>= 4
	}
}

func (c *http1Conn) useRequestIDs(prefix string) {
	c.idPrefix = prefix
	c.req, c.idAt = serializeHTTP1ID(c.t, c.spec, c.keepAlive, prefix)
}

func (c *http1Conn) setRequestID(n uint64) { putHex(c.req[c.idAt:c.idAt+requestIDDigits], n) }

// serializeHTTP1ID is serializeHTTP1 with an X-Request-Id header of
// prefix and a number, and where the number's digits start.
func serializeHTTP1ID(t Target, spec RequestSpec, keepAlive bool, prefix string) ([]byte, int) {
	h := http.Header{}
	for k, vs := range spec.Headers {
		if http.CanonicalHeaderKey(k) != RequestIDHeader {
			h[k] = vs
		}
	}
	marker := RequestID(prefix, 0)
	h[RequestIDHeader] = []string{marker}
	spec.Headers = h
	req := serializeHTTP1(t, spec, keepAlive)
	at := bytes.Index(req, []byte(RequestIDHeader+": "+marker+"\r\n"))
	return req, at + len(RequestIDHeader+": "+prefix+"-")
}

func (c *h2Conn) useRequestIDs(prefix string) { c.idPrefix = prefix }
func (c *h2Conn) setRequestID(n uint64)       { c.idN = n }

func (c *grpcConn) useRequestIDs(prefix string) { c.idPrefix = prefix }
func (c *grpcConn) setRequestID(n uint64)       { c.idN = n }

// perRequest is what a worker does per request besides recording it:
// setting the request's id (Config.RequestIDs) and reporting it
// (Config.OnRequest). The zero value does neither.
type perRequest struct {
	ids bool
	on  func(RequestRecord)
}

// before sets request n's id on c.
func (p perRequest) before(c conn, n uint64) {
	if p.ids {
		if r, ok := c.(requestIDer); ok {
			r.setRequestID(n)
		}
	}
}

// after reports the request.
func (p perRequest) after(n uint64, measured bool, intended, sent, end time.Duration, out Outcome) {
	if p.on != nil {
		p.on(RequestRecord{N: n, Measured: measured, Intended: intended, Sent: sent, End: end, Code: out.Code, Err: out.Err})
	}
}
