package latency

import (
	"encoding/base64"
	"fmt"
	"math"
	"sync"
	"unsafe"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Compact is a recorder in compact form, for keeping many histograms (one
// per second of a long run): the same values and exact side counters as the
// Recorder it came from, the histogram held in HdrHistogram's V2
// compressed encoding (the portable form's bytes, before base64). A second
// of 1000 loopback latencies takes about 1 KB where a Recorder holds every
// bucket of the 1 ns–60 s range (~220 KB). It answers the same questions
// as a Recorder, exactly as the Recorder would (Count and the other
// counters at once; percentiles by decoding, a sparse histogram, each
// time), and encodes to the same portable form byte for byte. It is not
// safe for concurrent use.
type Compact struct {
	counters
	enc []byte // V2 compressed histogram (cookie, length, zlib payload)
}

// emptyEncoding is the V2 encoding of an empty histogram of meshbench's
// geometry.
var emptyEncoding = sync.OnceValue(func() []byte {
	b, err := encodePacked(hdr.NewPacked(LowestNs, HighestNs, SigFigs))
	if err != nil {
		panic(err) // the library encodes any histogram it made
	}
	return b
})

// NewCompact returns an empty compact recorder.
func NewCompact() *Compact {
	return &Compact{counters: counters{minNs: math.MaxInt64}, enc: emptyEncoding()}
}

// Compact returns r's values in compact form; r is unchanged. It reads
// only r's populated buckets into the encoding (no full-range copy).
func (r *Recorder) Compact() (*Compact, error) {
	p := hdr.NewPacked(LowestNs, HighestNs, SigFigs)
	// One geometry: every bucket fits, nothing is dropped.
	p.MergeFrom(r.h)
	return compactOf(p, r.counters)
}

func compactOf(p *hdr.PackedHistogram, c counters) (*Compact, error) {
	b, err := encodePacked(p)
	if err != nil {
		return nil, err
	}
	return &Compact{counters: c, enc: b}, nil
}

// encodePacked returns p's V2 compressed encoding, without base64.
func encodePacked(p *hdr.PackedHistogram) ([]byte, error) {
	b64, err := p.Encode()
	if err != nil {
		return nil, fmt.Errorf("encoding histogram: %w", err)
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(b, b64)
	if err != nil {
		return nil, fmt.Errorf("encoding histogram: %w", err)
	}
	return b[:n:n], nil
}

// Packed decodes c's histogram into a new sparse histogram (for reading:
// percentiles, an interval log); c is unchanged.
func (c *Compact) Packed() (*hdr.PackedHistogram, error) {
	p, err := hdr.DecodePacked([]byte(base64.StdEncoding.EncodeToString(c.enc)))
	if err != nil {
		return nil, fmt.Errorf("decoding compact histogram: %w", err)
	}
	return p, nil
}

// mustPacked is Packed for queries: c's encoding was written by Compact,
// NewCompact or checked by DecodeCompact, so it decodes.
func (c *Compact) mustPacked() *hdr.PackedHistogram {
	p, err := c.Packed()
	if err != nil {
		panic(err)
	}
	return p
}

// Recorder returns c's values as a Recorder (which allocates the full
// ~220 KB range); c is unchanged.
func (c *Compact) Recorder() *Recorder {
	r := &Recorder{h: hdr.New(LowestNs, HighestNs, SigFigs), counters: c.counters}
	c.mustPacked().MergeInto(r.h)
	return r
}

// Merge adds every value of other into c, exactly.
func (c *Compact) Merge(other *Compact) error {
	if other == nil || (other.count == 0 && other.outOfRange == 0) {
		return nil
	}
	p := c.mustPacked()
	if dropped := p.Merge(other.mustPacked()); dropped != 0 {
		return fmt.Errorf("merging histograms: %d values did not fit", dropped)
	}
	b, err := encodePacked(p)
	if err != nil {
		return err
	}
	c.enc = b
	c.merge(other.counters)
	return nil
}

// Percentile is Recorder.Percentile.
func (c *Compact) Percentile(p float64) int64 {
	return c.percentile(p, c.valueAt())
}

// Summarize is Recorder.Summarize.
func (c *Compact) Summarize() Summary {
	valueAt := c.valueAt()
	return c.summarize(func(p float64) int64 { return c.percentile(p, valueAt) })
}

// valueAt is the histogram's value at a percentile; without values in
// range it is an empty histogram's (0), without decoding.
func (c *Compact) valueAt() func(float64) int64 {
	if c.count == 0 {
		return func(float64) int64 { return 0 }
	}
	return c.mustPacked().ValueAtPercentile
}

// Equal reports whether c holds the same values and counters as r.
func (c *Compact) Equal(r *Recorder) bool {
	return r.Equal(c.Recorder())
}

// Encode returns the portable form of c: the same as its Recorder's.
func (c *Compact) Encode() (Encoded, error) {
	return Encoded{Summary: c.Summarize(), HDR: base64.StdEncoding.EncodeToString(c.enc)}, nil
}

// ByteSize is the memory c holds, in bytes: its struct and its encoding.
func (c *Compact) ByteSize() int {
	return int(unsafe.Sizeof(*c)) + cap(c.enc)
}

// DecodeCompact is Decode into compact form: it never builds the full
// range, and keeps the encoding as it is when the geometry is meshbench's.
func DecodeCompact(e Encoded) (*Compact, error) {
	h, err := decodeHDR(e, func(b []byte) (geometry, error) { return hdr.DecodePacked(b) })
	if err != nil {
		return nil, err
	}
	if p := h.(*hdr.PackedHistogram); p.HighestTrackableValue() != HighestNs {
		// A wider range than meshbench's (another writer): re-record into
		// meshbench's, refusing values that do not fit, as Decode does.
		m := hdr.NewPacked(LowestNs, HighestNs, SigFigs)
		if dropped := m.Merge(p); dropped != 0 {
			return nil, fmt.Errorf("histogram has %d values outside meshbench's range", dropped)
		}
		return compactOf(m, e.counters())
	}
	b, err := base64.StdEncoding.DecodeString(e.HDR)
	if err != nil {
		return nil, fmt.Errorf("decoding histogram: %w", err)
	}
	return &Compact{counters: e.counters(), enc: b}, nil
}
