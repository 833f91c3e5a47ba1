package sample

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// SamplesSchema is the version every line of results.SamplesFile carries
// in its "schema" key. Files written before the key existed (meshbench
// 0.1.0-dev) lack it and have the same shape; ReadRounds reads both and
// refuses a line of another version.
const SamplesSchema = "meshbench.samples/v1"

type sampleLine struct {
	Schema        string  `json:"schema"`
	TUnixNs       int64   `json:"t_unix_ns"`
	PID           int     `json:"pid"`
	Name          string  `json:"name"`
	Component     string  `json:"component"`
	Category      string  `json:"category"`
	CPUMillicores float64 `json:"cpu_millicores"`
	RSSBytes      uint64  `json:"rss_bytes"`
	PSSBytes      *uint64 `json:"pss_bytes,omitempty"` // nil: PSS not read this round
	Round         int     `json:"round"`
}

type gapLine struct {
	Schema    string `json:"schema"`
	TUnixNs   int64  `json:"t_unix_ns"`
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	Component string `json:"component"`
	Category  string `json:"category"`
	Gap       string `json:"gap"`
	Gone      bool   `json:"gone"`
	Round     int    `json:"round"`
}

type roundLine struct {
	Schema        string `json:"schema"`
	TUnixNs       int64  `json:"t_unix_ns"`
	Round         int    `json:"round"`
	Processes     int    `json:"processes"`
	SamplerCPUNs  int64  `json:"sampler_cpu_ns"`
	SamplerWallNs int64  `json:"sampler_wall_ns"`
}

// WriteRound writes r to w as JSON lines, in one Write call. This is the
// format of results.SamplesFile: each round is consecutive lines of three
// shapes, all carrying the format's version in "schema" (SamplesSchema)
// and the round's index in "round":
//
//	{"schema":…,"t_unix_ns":…,"pid":…,"name":…,"component":…,"category":…,"cpu_millicores":…,"rss_bytes":…,"pss_bytes":…,"round":…}
//	{"schema":…,"t_unix_ns":…,"pid":…,"name":…,"component":…,"category":…,"gap":"exited","gone":true,"round":…}
//	{"schema":…,"t_unix_ns":…,"round":…,"processes":…,"sampler_cpu_ns":…,"sampler_wall_ns":…}
//
// one sample line per process with a sample, one gap line per process
// without one, then one line with the round's start time and overhead.
// pss_bytes is left out of a sample line when PSS was not read in that
// round (Sampler.PSSEvery); ReadRounds also takes it as null.
// t_unix_ns is Unix time in nanoseconds (for samples and gaps, when the
// process was read); cpu_millicores is a float (1000 = one core); the other
// numbers are integers in the unit their key names.
func WriteRound(w io.Writer, r Round) error {
	buf, err := appendRoundLines(nil, &r)
	if err != nil {
		return err
	}
	if buf, err = appendOverheadLine(buf, &r); err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

func appendRoundLines(buf []byte, r *Round) ([]byte, error) {
	var err error
	for _, s := range r.Samples {
		var pss *uint64
		if s.HasPSS {
			pss = &s.PSSBytes
		}
		buf, err = appendJSONLine(buf, sampleLine{
			Schema: SamplesSchema, TUnixNs: s.Time.UnixNano(), PID: s.PID, Name: s.Name, Component: s.Component, Category: s.Category,
			CPUMillicores: s.CPUMillicores, RSSBytes: s.RSSBytes, PSSBytes: pss, Round: r.Index,
		})
		if err != nil {
			return buf, err
		}
	}
	for _, g := range r.Gaps {
		buf, err = appendJSONLine(buf, gapLine{
			Schema: SamplesSchema, TUnixNs: g.Time.UnixNano(), PID: g.PID, Name: g.Name, Component: g.Component, Category: g.Category,
			Gap: g.Reason, Gone: g.Gone, Round: r.Index,
		})
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func appendOverheadLine(buf []byte, r *Round) ([]byte, error) {
	return appendJSONLine(buf, roundLine{
		Schema: SamplesSchema, TUnixNs: r.Time.UnixNano(), Round: r.Index, Processes: r.Overhead.Processes,
		SamplerCPUNs: int64(r.Overhead.CPU), SamplerWallNs: int64(r.Overhead.Wall),
	})
}

// appendJSONLine appends v's JSON and a newline. It fails only for a
// non-finite cpu_millicores, which the Sampler never produces.
func appendJSONLine(buf []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return buf, fmt.Errorf("encoding resource sample: %w", err)
	}
	return append(append(buf, b...), '\n'), nil
}

// line is the union of the three shapes, for reading.
type line struct {
	Schema        *string  `json:"schema"` // absent in files before the key
	TUnixNs       *int64   `json:"t_unix_ns"`
	Round         *int     `json:"round"`
	PID           int      `json:"pid"`
	Name          string   `json:"name"`
	Component     string   `json:"component"`
	Category      string   `json:"category"`
	CPUMillicores *float64 `json:"cpu_millicores"`
	RSSBytes      uint64   `json:"rss_bytes"`
	PSSBytes      *uint64  `json:"pss_bytes"` // absent or null: not read
	Gap           *string  `json:"gap"`
	Gone          bool     `json:"gone"`
	Processes     int      `json:"processes"`
	SamplerCPUNs  *int64   `json:"sampler_cpu_ns"`
	SamplerWallNs int64    `json:"sampler_wall_ns"`
}

// MaxLineBytes is the longest JSON line ReadRounds accepts, in bytes.
const MaxLineBytes = 1 << 20

// ReadRounds reads rounds written by WriteRound (or a Sampler's Out), in
// round order. Lines of one round need not be adjacent; unknown keys are
// ignored. Times come back in UTC, without a monotonic clock reading. A
// round whose overhead line is missing (a run cut short) keeps the time of
// its earliest sample or gap and a zero Overhead.
func ReadRounds(r io.Reader) ([]Round, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	rounds := map[int]*Round{}
	hasTime := map[int]bool{}
	get := func(i int) *Round {
		if rd, ok := rounds[i]; ok {
			return rd
		}
		rd := &Round{Index: i}
		rounds[i] = rd
		return rd
	}
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("reading resource samples, line %d: %w", n, err)
		}
		if l.Schema != nil && *l.Schema != SamplesSchema {
			return nil, fmt.Errorf("reading resource samples, line %d: schema %q, this meshbench reads %s (or lines without the key)", n, *l.Schema, SamplesSchema)
		}
		if l.TUnixNs == nil || l.Round == nil || *l.Round < 0 {
			return nil, fmt.Errorf("reading resource samples, line %d: t_unix_ns and a round index >= 0 are required", n)
		}
		t := time.Unix(0, *l.TUnixNs).UTC()
		rd := get(*l.Round)
		target := Target{PID: l.PID, Name: l.Name, Component: l.Component, Category: l.Category}
		switch {
		case l.SamplerCPUNs != nil:
			rd.Time, hasTime[rd.Index] = t, true
			rd.Overhead = Overhead{CPU: time.Duration(*l.SamplerCPUNs), Wall: time.Duration(l.SamplerWallNs), Processes: l.Processes}
			continue
		case l.Gap != nil:
			rd.Gaps = append(rd.Gaps, Gap{Target: target, Time: t, Reason: *l.Gap, Gone: l.Gone})
		case l.CPUMillicores != nil:
			x := Sample{Target: target, Time: t, CPUMillicores: *l.CPUMillicores, RSSBytes: l.RSSBytes}
			if l.PSSBytes != nil { // files written before PSSEvery always have it
				x.PSSBytes, x.HasPSS = *l.PSSBytes, true
			}
			rd.Samples = append(rd.Samples, x)
		default:
			return nil, fmt.Errorf("reading resource samples, line %d: neither a sample (cpu_millicores), a gap (gap) nor a round (sampler_cpu_ns)", n)
		}
		if !hasTime[rd.Index] && (rd.Time.IsZero() || t.Before(rd.Time)) {
			rd.Time = t
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("reading resource samples: a line is longer than %d bytes", MaxLineBytes)
		}
		return nil, fmt.Errorf("reading resource samples: %w", err)
	}
	out := make([]Round, 0, len(rounds))
	for _, rd := range rounds {
		out = append(out, *rd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}
