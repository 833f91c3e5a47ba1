package latency

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
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
// A Compactor does the same without allocating more than the result.
func (r *Recorder) Compact() (*Compact, error) {
	return NewCompactor().Compact(r)
}

// Compactor turns recorders into Compacts, reusing its buffers and its
// zlib writer, so that compacting allocates only the Compact's own bytes.
// It exists for the load engine, which seals three histograms a second
// while it measures: hdrhistogram-go's encoder allocates a zlib writer
// (~0.9 MB at BestCompression) and a small slice per bucket for every
// histogram, ~0.8 ms and 2.7 MB of garbage a second in the process whose
// CPU is being measured. The bytes are the library's own: its V2 layout
// (header, zero-run-length ZigZag LEB128 counts, zlib at BestCompression),
// which the tests compare with the library's encoder byte for byte. It is
// not safe for concurrent use.
type Compactor struct {
	p     *hdr.PackedHistogram
	inner []byte // header and payload, before zlib
	z     bytes.Buffer
	zw    *zlib.Writer
}

// NewCompactor returns a Compactor.
func NewCompactor() *Compactor {
	zw, err := zlib.NewWriterLevel(nil, zlib.BestCompression)
	if err != nil {
		panic(err) // BestCompression is a valid level
	}
	return &Compactor{p: hdr.NewPacked(LowestNs, HighestNs, SigFigs), zw: zw}
}

// Compact returns r's values in compact form; r is unchanged.
func (k *Compactor) Compact(r *Recorder) (*Compact, error) {
	k.p.Reset()
	// One geometry: every bucket fits, nothing is dropped.
	if dropped := k.p.MergeFrom(r.h); dropped != 0 {
		return nil, fmt.Errorf("compacting histogram: %d values did not fit", dropped)
	}
	return &Compact{counters: r.counters, enc: k.encode(k.p)}, nil
}

// The V2 encoding's cookies (hdrhistogram-go's V2EncodingCookieBase and
// V2CompressedEncodingCookieBase, with the word size flag 0x10 its encoder
// sets), and its header's size.
const (
	v2Cookie           = hdr.V2EncodingCookieBase | 0x10
	v2CompressedCookie = hdr.V2CompressedEncodingCookieBase | 0x10
	v2HeaderBytes      = 40
)

// Bucket indexing of meshbench's geometry, as hdrhistogram-go derives it
// (geometryMagnitudes): 2·10^SigFigs values at unit resolution need 2^11
// sub-buckets, so a bucket's upper half is 2^10 of them; 1 ns units.
const (
	subBucketHalfCountMag = 10
	subBucketHalfCount    = 1 << subBucketHalfCountMag
	subBucketMask         = 2*subBucketHalfCount - 1
)

// flatIndex is the counts index hdrhistogram-go keeps v's bucket at.
func flatIndex(v int64) int {
	bucket := 64 - bits.LeadingZeros64(uint64(v)|subBucketMask) - (subBucketHalfCountMag + 1)
	sub := int(v >> uint(bucket))
	return (bucket+1)<<subBucketHalfCountMag + sub - subBucketHalfCount
}

// encode writes p as the V2 compressed encoding (without base64), as
// hdrhistogram-go's Encode does, into a new slice.
func (k *Compactor) encode(p *hdr.PackedHistogram) []byte {
	in := k.inner[:0]
	in = binary.BigEndian.AppendUint32(in, uint32(v2Cookie))
	in = binary.BigEndian.AppendUint32(in, 0) // payload length, below
	in = binary.BigEndian.AppendUint32(in, 0) // normalizing index offset
	in = binary.BigEndian.AppendUint32(in, uint32(int32(SigFigs)))
	in = binary.BigEndian.AppendUint64(in, uint64(LowestNs))
	in = binary.BigEndian.AppendUint64(in, uint64(HighestNs))
	in = binary.BigEndian.AppendUint64(in, math.Float64bits(1)) // integer-to-double ratio
	// Counts from index 0 to the largest populated one (index 0 alone when
	// empty); a run of z > 1 empty buckets is written as −z.
	next := 0
	zeros := func(in []byte, z int) []byte {
		switch {
		case z > 1:
			return appendZigZag(in, -int64(z))
		case z == 1:
			return appendZigZag(in, 0)
		}
		return in
	}
	for v, n := range p.ForEachBucket {
		i := flatIndex(v)
		in = zeros(in, i-next)
		in = appendZigZag(in, n)
		next = i + 1
	}
	if next == 0 {
		in = appendZigZag(in, 0)
	}
	binary.BigEndian.PutUint32(in[4:], uint32(len(in)-v2HeaderBytes))
	k.inner = in

	k.z.Reset()
	k.zw.Reset(&k.z)
	_, _ = k.zw.Write(in) // into memory: cannot fail
	_ = k.zw.Close()
	out := make([]byte, 8, 8+k.z.Len())
	binary.BigEndian.PutUint32(out, uint32(v2CompressedCookie))
	binary.BigEndian.PutUint32(out[4:], uint32(k.z.Len()))
	return append(out, k.z.Bytes()...)
}

// appendZigZag appends v ZigZag-encoded as HdrHistogram's LEB128 variant:
// 7 bits a byte, high bit set when more follow, and the ninth byte, when
// reached, holding the last 8 bits whole.
func appendZigZag(b []byte, v int64) []byte {
	u := uint64((v << 1) ^ (v >> 63))
	for i := 0; i < 8; i++ {
		if u>>7 == 0 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f|0x80))
		u >>= 7
	}
	return append(b, byte(u))
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
