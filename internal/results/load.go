// Package results holds meshbench's versioned on-disk formats: their types,
// readers and writers. It computes nothing beyond exact merging.
package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"google.golang.org/grpc/codes"
)

// LoadSchema names the version of the load result format. A reader accepts
// exactly this value; a change of meaning gets a new version.
const LoadSchema = "meshbench.load-result/v1"

// RateShortfallTolerance is how far below its schedule an open-loop run may
// fall (sent / scheduled) before it is reported as not having reached its
// rate (0.2%). Reports warn and the lab marks the run invalid past it.
const RateShortfallTolerance = 0.002

// DefaultErrorRatio is the fraction of failed requests above which a run
// is invalid unless a plan says otherwise: 1% of the requests.
const DefaultErrorRatio = 0.01

// Problems lists why r must not be used as a measurement: an open-loop
// schedule missed by more than shortfall, more than errRatio of the
// requests failed, an interruption. 0 or less means the default
// (RateShortfallTolerance, DefaultErrorRatio). Every platform judges its
// runs with it.
func (r *LoadResult) Problems(shortfall, errRatio float64) []string {
	if shortfall <= 0 {
		shortfall = RateShortfallTolerance
	}
	if errRatio <= 0 {
		errRatio = DefaultErrorRatio
	}
	var out []string
	// Scheduled covers the whole window asked for: an interrupted run falls
	// short of it because it stopped, not because the rate was missed.
	// Sent counts only requests started within the window (see
	// loadgen.Run): tickets that waited past its end are NotSent.
	if !r.Interrupted && r.Scheduled > 0 && float64(r.Sent) < float64(r.Scheduled)*(1-shortfall) {
		msg := fmt.Sprintf("target rate not reached: sent %d of %d scheduled", r.Sent, r.Scheduled)
		if r.NotSent > 0 {
			msg += fmt.Sprintf(" (%d not sent: %s)", r.NotSent, r.NotSentReason)
		}
		out = append(out, msg)
	}
	if r.Bulk() {
		// Every stream is the load: one that ended early leaves the
		// others carrying what it would have, so none may fail.
		if failed := r.Completed - r.Success; failed > 0 {
			out = append(out, fmt.Sprintf("%d of %d bulk streams ended before the measured window did", failed, r.Completed))
		}
		if r.BytesIn == 0 && !r.Interrupted {
			out = append(out, "no bytes arrived in the measured window")
		}
	}
	if n := r.LocalErrors(); n > 0 {
		out = append(out, fmt.Sprintf("%d requests failed in the load generator itself (%s), not in the target", n, loadgen.KindLocal))
	}
	if failed := r.Completed - r.Success; !r.Bulk() && failed > 0 && float64(failed) > errRatio*float64(r.Completed) {
		out = append(out, fmt.Sprintf("%d of %d requests failed", failed, r.Completed))
	}
	if r.Interrupted {
		out = append(out, "interrupted")
	}
	return out
}

// LocalErrors counts the requests that failed in the load generator itself
// (error kind loadgen.KindLocal: out of file descriptors), not in the target.
func (r *LoadResult) LocalErrors() int64 {
	var n int64
	for _, e := range r.Errors {
		if e.Kind == loadgen.KindLocal {
			n += e.Count
		}
	}
	return n
}

// Load models, the stored labels of LoadResult.Model.
const (
	ModelOpen   = "open"   // open loop at a constant rate (throttled)
	ModelClosed = "closed" // closed loop (loadgen.ClosedLoop), maximum throughput
	ModelBulk   = "bulk"   // bulk throughput (loadgen.Bulk): endless answers read flat out
)

// ModelOf is the stored label of load l: ModelClosed for the closed loop,
// ModelBulk for bulk, else ModelOpen.
func ModelOf(l loadgen.Load) string {
	switch {
	case l.Closed():
		return ModelClosed
	case l.Bulk():
		return ModelBulk
	}
	return ModelOpen
}

// Bulk reports whether r is a bulk-throughput result: its figure is the
// bytes received in the window (ThroughputBytesPerSec), its "requests"
// are the streams, one per connection, and its latencies each stream's
// time to its first byte.
func (r *LoadResult) Bulk() bool { return r.Model == ModelBulk }

// ThroughputBytesPerSec is a bulk result's body bytes received in the
// measured window per second of it (0 for other models).
func (r *LoadResult) ThroughputBytesPerSec() float64 {
	if !r.Bulk() || r.DurationNs <= 0 {
		return 0
	}
	return float64(r.BytesIn) / time.Duration(r.DurationNs).Seconds()
}

// LoadResult is one load run (or the exact merge of several), as written by
// `meshbench load --output-format json` and read by `meshbench merge`. The
// JSON Schema is schema/load-result.v1.schema.json.
type LoadResult struct {
	Schema           string   `json:"schema"`
	MeshbenchVersion string   `json:"meshbench_version"`
	Model            string   `json:"model"`
	Protocol         string   `json:"protocol"`
	Targets          []string `json:"targets"`
	// TargetRatePerSec is the schedule's rate (open loop), 0 in closed loop.
	TargetRatePerSec float64 `json:"target_rate_per_sec"`
	Connections      int     `json:"connections"`
	DurationNs       int64   `json:"duration_ns"`
	WarmupNs         int64   `json:"warmup_ns"`
	TimeoutNs        int64   `json:"timeout_ns"`
	MaxQueue         int     `json:"max_queue"`
	// Workers is how many load generators this result combines (1 unless merged).
	Workers int `json:"workers"`
	// Worker says which share of a split load this result is (`meshbench
	// load --workers W --worker-index I` with W > 1); nil for an unsplit
	// run and for a merge. Merge refuses two parts with the same index or
	// with different counts.
	Worker *WorkerShare `json:"worker,omitempty"`

	StartedAt time.Time `json:"started_at"` // wall clock, start of the measured window
	EndedAt   time.Time `json:"ended_at"`   // wall clock, last answer

	Scheduled int64 `json:"scheduled"` // requests the schedule held (open loop)
	Sent      int64 `json:"sent"`
	Completed int64 `json:"completed"`
	Success   int64 `json:"success"`
	Dropped   int64 `json:"dropped"`
	// NotSent counts requests due within the window that were still
	// waiting for a free connection when it ended (every connection
	// hung or slow): never sent, so part of the rate shortfall.
	// NotSentReason says why. Both are omitted when none; added within
	// v1, so earlier readers refuse only results that carry them.
	NotSent       int64  `json:"not_sent,omitempty"`
	NotSentReason string `json:"not_sent_reason,omitempty"`
	Canceled      int64  `json:"canceled"`
	BytesIn       int64  `json:"bytes_in"`
	BytesOut      int64  `json:"bytes_out"`

	// FirstSendNs, LastSendNs and LastEndNs are Unix times in ns, so results
	// of several workers line up on one clock when merged.
	FirstSendNs int64 `json:"first_send_unix_ns"`
	LastSendNs  int64 `json:"last_send_unix_ns"`
	LastEndNs   int64 `json:"last_end_unix_ns"`

	StatusCodes map[string]int64 `json:"status_codes"`
	Errors      []ErrorCount     `json:"errors"`

	Latency     latency.Encoded `json:"latency"`
	ServiceTime latency.Encoded `json:"service_time"`
	ScheduleLag latency.Encoded `json:"schedule_lag"`

	Interrupted bool `json:"interrupted"`

	// RequestsPerConnection is how many requests each connection carried
	// before a new one was opened (loadgen.Config.RequestsPerConnection;
	// 1: a connection per request); 0, omitted, kept every connection.
	// Arrivals is the open loop's spacing ("poisson"; omitted for
	// constant) and Seed its draw. Added within v1, so earlier readers
	// refuse only results that carry them.
	RequestsPerConnection int    `json:"requests_per_connection,omitempty"`
	Arrivals              string `json:"arrivals,omitempty"`
	Seed                  uint64 `json:"seed,omitempty"`
	// SendTickNs is the open loop's send tick (loadgen.Config.SendTick):
	// requests due within a tick left together, up to one tick after
	// their intended time (counted in latency and schedule lag); omitted
	// for exact spacing. Added within v1.
	SendTickNs int64 `json:"send_tick_ns,omitempty"`

	// Intervals holds the three histograms per interval of the measured
	// window (one second with meshbench's engine), by answer time, from
	// the window's start to the last answer, empty intervals included: a
	// stall is visible where it happened. Their counts add up to the
	// whole-run histograms'. Absent for external generators and for
	// results written before it existed; added within v1, so earlier
	// readers refuse only results that carry it.
	Intervals []IntervalHistograms `json:"intervals,omitempty"`

	// Generator names the external load generator that measured this
	// result (`meshbench load --generator oha|wrk2`) and how; nil for
	// meshbench's own engine.
	Generator *Generator `json:"generator,omitempty"`
}

// Generator records an external load generator's run: which tool, its
// command line, and how exact each figure is. A figure the tool does not
// give is left at zero and named in Notes.
type Generator struct {
	Name    string `json:"name"`    // "oha", "wrk2", "vegeta" or "fortio"
	Version string `json:"version"` // as the tool reports it
	// Commands is the measured run's command line, shell-quoted; one per
	// worker in a merge.
	Commands []string `json:"commands"`
	// Histograms says how the histograms were obtained ("exact: from
	// oha's 400 per-request records", "reconstructed from wrk2's
	// percentile spectrum (N points)").
	Histograms string `json:"histograms"`
	// PartialHistograms: the histograms hold fewer values than completed
	// (failed requests the tool keeps no timing for, wrk2's calibration
	// period).
	PartialHistograms bool `json:"partial_histograms,omitempty"`
	// Notes lists what the tool does not report and how the other figures
	// were derived, one sentence each.
	Notes []string `json:"notes,omitempty"`
	// LatencyFromActualSend: the tool times each request from when it
	// was actually sent (vegeta, fortio), not from its intended send
	// time, so its latency leaves out its own lateness. Added within v1.
	LatencyFromActualSend bool `json:"latency_from_actual_send,omitempty"`
}

// IntervalHistograms is one interval of a load result: the answers that
// arrived in [StartedAt+StartNs, StartedAt+StartNs+LengthNs).
type IntervalHistograms struct {
	// StartNs is the interval's start since the measured window's start
	// (LoadResult.StartedAt), LengthNs its length; both in ns.
	StartNs     int64           `json:"start_ns"`
	LengthNs    int64           `json:"length_ns"`
	Latency     latency.Encoded `json:"latency"`
	ServiceTime latency.Encoded `json:"service_time"`
	ScheduleLag latency.Encoded `json:"schedule_lag"`
	// Failed counts the interval's answers that were failures (an error,
	// or a status that is not a success); the histograms hold every
	// answer. Added within v1: absent in results from before it and
	// where none failed.
	Failed int64 `json:"failed,omitempty"`
}

// Decode decodes the interval's three histograms.
func (iv IntervalHistograms) Decode() (lat, svc, lag *latency.Recorder, err error) {
	return decodeInterval(iv, latency.Decode)
}

// DecodeCompact decodes the interval's three histograms in compact form
// (a few KB each instead of the full range's ~220 KB): for holding many.
func (iv IntervalHistograms) DecodeCompact() (lat, svc, lag *latency.Compact, err error) {
	return decodeInterval(iv, latency.DecodeCompact)
}

func decodeInterval[R any](iv IntervalHistograms, decode func(latency.Encoded) (R, error)) (lat, svc, lag R, err error) {
	var zero R
	if lat, err = decode(iv.Latency); err != nil {
		return zero, zero, zero, fmt.Errorf("interval at %v: latency: %w", time.Duration(iv.StartNs), err)
	}
	if svc, err = decode(iv.ServiceTime); err != nil {
		return zero, zero, zero, fmt.Errorf("interval at %v: service_time: %w", time.Duration(iv.StartNs), err)
	}
	if lag, err = decode(iv.ScheduleLag); err != nil {
		return zero, zero, zero, fmt.Errorf("interval at %v: schedule_lag: %w", time.Duration(iv.StartNs), err)
	}
	return lat, svc, lag, nil
}

// WorkerShare identifies one generator's share of a load split among
// Count generators: Index is 0 to Count-1 (a Kubernetes Job's completion
// index).
type WorkerShare struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ErrorCount is one entry of the error set.
type ErrorCount struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// FromRun converts an engine result into the on-disk form.
func FromRun(r *loadgen.Result, version string) (*LoadResult, error) {
	out := &LoadResult{
		Schema: LoadSchema, MeshbenchVersion: version, Model: ModelOf(r.Config.Load),
		Protocol: string(r.Config.Targets[0].Protocol), Connections: r.ConnectionsN,
		DurationNs: int64(r.Config.Duration), WarmupNs: int64(r.Config.Warmup),
		TimeoutNs: int64(r.Config.Timeout), MaxQueue: r.Config.MaxQueue, Workers: 1,
		StartedAt: r.Start.UTC(), EndedAt: r.End.UTC(),
		Scheduled: int64(r.Scheduled), Sent: r.Sent, Completed: r.Completed, Success: r.Success,
		Dropped: r.Dropped, NotSent: r.NotSent, Canceled: r.Canceled, BytesIn: r.BytesIn, BytesOut: r.BytesOut,
		StatusCodes: map[string]int64{}, Errors: []ErrorCount{}, Interrupted: r.Interrupted,
	}
	if r.NotSent > 0 {
		out.NotSentReason = loadgen.NotSentReason
	}
	out.RequestsPerConnection = r.Config.RequestsPerConnection
	out.SendTickNs = int64(r.Config.SendTick)
	if r.Config.Arrivals == loadgen.ArrivalsPoisson {
		out.Arrivals, out.Seed = string(r.Config.Arrivals), r.Config.Seed
	}
	if r.Config.Load.Closed() || r.Config.Load.Bulk() {
		out.MaxQueue = 0
	} else {
		out.TargetRatePerSec = r.Config.Load.PerSecond()
	}
	for _, t := range r.Config.Targets {
		out.Targets = append(out.Targets, t.Raw)
	}
	if r.Sent > 0 {
		out.FirstSendNs = r.Start.Add(r.FirstSend).UnixNano()
		out.LastSendNs = r.Start.Add(r.LastSend).UnixNano()
		out.LastEndNs = r.Start.Add(r.LastEnd).UnixNano()
	}
	for code, n := range r.Codes {
		out.StatusCodes[StatusName(r.Config.Targets[0].Protocol, code)] += n
	}
	for k, n := range r.Errors {
		out.Errors = append(out.Errors, ErrorCount{Kind: k.Kind, Message: k.Message, Count: n})
	}
	sortErrors(out.Errors)
	var err error
	if out.Latency, err = r.Latency.Encode(); err != nil {
		return nil, err
	}
	if out.ServiceTime, err = r.ServiceTime.Encode(); err != nil {
		return nil, err
	}
	if out.ScheduleLag, err = r.ScheduleLag.Encode(); err != nil {
		return nil, err
	}
	for _, iv := range r.Intervals {
		e := IntervalHistograms{StartNs: int64(iv.Start), LengthNs: int64(r.Config.Interval), Failed: iv.Failed}
		if e.Latency, err = iv.Latency.Encode(); err != nil {
			return nil, err
		}
		if e.ServiceTime, err = iv.ServiceTime.Encode(); err != nil {
			return nil, err
		}
		if e.ScheduleLag, err = iv.ScheduleLag.Encode(); err != nil {
			return nil, err
		}
		out.Intervals = append(out.Intervals, e)
	}
	return out, nil
}

// StatusName renders a protocol status: HTTP codes as numbers ("200"),
// gRPC codes by name ("OK", "Unavailable"), a complete TCP echo as "OK", and
// failures below the protocol as "0" (vegeta's convention).
func StatusName(p loadgen.Protocol, code int) string {
	switch p {
	case loadgen.GRPC:
		return codes.Code(code).String()
	case loadgen.TCP:
		if code == 1 {
			return "OK"
		}
	}
	return strconv.Itoa(code)
}

func sortErrors(e []ErrorCount) {
	sort.Slice(e, func(i, j int) bool {
		if e[i].Count != e[j].Count {
			return e[i].Count > e[j].Count
		}
		if e[i].Kind != e[j].Kind {
			return e[i].Kind < e[j].Kind
		}
		return e[i].Message < e[j].Message
	})
}

// Histograms decodes the three histograms.
func (r *LoadResult) Histograms() (lat, svc, lag *latency.Recorder, err error) {
	if lat, err = latency.Decode(r.Latency); err != nil {
		return nil, nil, nil, fmt.Errorf("latency: %w", err)
	}
	if svc, err = latency.Decode(r.ServiceTime); err != nil {
		return nil, nil, nil, fmt.Errorf("service_time: %w", err)
	}
	if lag, err = latency.Decode(r.ScheduleLag); err != nil {
		return nil, nil, nil, fmt.Errorf("schedule_lag: %w", err)
	}
	return lat, svc, lag, nil
}

// ServiceMeanNs is the mean service time (send to answer) in
// nanoseconds; 0 when the histogram is unreadable or empty.
func (r *LoadResult) ServiceMeanNs() float64 {
	svc, err := latency.Decode(r.ServiceTime)
	if err != nil {
		return 0
	}
	return svc.MeanNs()
}

// AttackDuration is the span between the first and the last send (vegeta's
// "attack"); Wait is from the last send to the last answer. For a
// generator that reports no send times (wrk2: FirstSendNs 0) it is the
// measured window, StartedAt to EndedAt.
func (r *LoadResult) AttackDuration() time.Duration {
	if r.Sent == 0 {
		return 0
	}
	if r.FirstSendNs == 0 && r.Generator != nil {
		return max(r.EndedAt.Sub(r.StartedAt), 0)
	}
	return time.Duration(r.LastSendNs - r.FirstSendNs)
}

// Wait is the time from the last send to the last answer.
func (r *LoadResult) Wait() time.Duration {
	if r.Sent == 0 || r.LastEndNs < r.LastSendNs {
		return 0
	}
	return time.Duration(r.LastEndNs - r.LastSendNs)
}

// AchievedRatePerSec is requests sent per second of attack, computed as
// vegeta does (sent / attack duration); 0 when fewer than two were sent.
func (r *LoadResult) AchievedRatePerSec() float64 {
	d := r.AttackDuration().Seconds()
	if d <= 0 {
		return 0
	}
	return float64(r.Sent) / d
}

// ThroughputPerSec is successful answers per second of attack plus wait.
func (r *LoadResult) ThroughputPerSec() float64 {
	d := (r.AttackDuration() + r.Wait()).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(r.Success) / d
}

// SuccessRatio is successes over completed requests (0 when none).
func (r *LoadResult) SuccessRatio() float64 {
	if r.Completed == 0 {
		return 0
	}
	return float64(r.Success) / float64(r.Completed)
}

// Write encodes r as indented JSON.
func (r *LoadResult) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Read decodes and checks one load result.
func Read(rd io.Reader) (*LoadResult, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r LoadResult
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a meshbench load result: %w", err)
	}
	if err := r.Check(); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReadFile reads a load result from a file.
func ReadFile(path string) (*LoadResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Check verifies the invariants a reader relies on, returning every problem.
func (r *LoadResult) Check() error {
	var errs []error
	if r.Schema != LoadSchema {
		errs = append(errs, fmt.Errorf("schema %q: this meshbench reads %q", r.Schema, LoadSchema))
	}
	if r.Model != ModelOpen && r.Model != ModelClosed && r.Model != ModelBulk {
		errs = append(errs, fmt.Errorf("model %q: allowed: %q, %q, %q", r.Model, ModelOpen, ModelClosed, ModelBulk))
	}
	for name, v := range map[string]int64{"scheduled": r.Scheduled, "sent": r.Sent, "completed": r.Completed,
		"success": r.Success, "dropped": r.Dropped, "not_sent": r.NotSent, "canceled": r.Canceled, "bytes_in": r.BytesIn, "bytes_out": r.BytesOut} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s %d: must be >= 0", name, v))
		}
	}
	if r.Completed > r.Sent || r.Success > r.Completed {
		errs = append(errs, fmt.Errorf("counts inconsistent: sent %d, completed %d, success %d", r.Sent, r.Completed, r.Success))
	}
	if r.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers %d: must be >= 1", r.Workers))
	}
	if w := r.Worker; w != nil {
		if w.Count < 1 || w.Index < 0 || w.Index >= w.Count {
			errs = append(errs, fmt.Errorf("worker index %d of count %d: the index must be 0 to count-1", w.Index, w.Count))
		}
		if r.Workers != 1 {
			errs = append(errs, fmt.Errorf("worker %d of %d combines %d workers: one worker's share is one generator", w.Index, w.Count, r.Workers))
		}
	}
	if len(errs) == 0 {
		lat, _, _, err := r.Histograms()
		if err != nil {
			errs = append(errs, err)
		} else if n := lat.Count() + lat.OutOfRange(); r.Generator != nil && r.Generator.PartialHistograms {
			if n > r.Completed {
				errs = append(errs, fmt.Errorf("latency histogram holds %d values, more than the %d completed", n, r.Completed))
			}
		} else if n != r.Completed {
			errs = append(errs, fmt.Errorf("latency histogram holds %d values but completed is %d", lat.Count()+lat.OutOfRange(), r.Completed))
		}
	}
	if len(errs) == 0 && len(r.Intervals) > 0 {
		errs = append(errs, r.checkIntervals())
	}
	return errors.Join(errs...)
}

// checkIntervals verifies that the intervals are consecutive, of one
// positive length, and hold together the whole-run latency histogram's
// values.
func (r *LoadResult) checkIntervals() error {
	var n, failed int64
	length := r.Intervals[0].LengthNs
	for i, iv := range r.Intervals {
		if iv.LengthNs <= 0 || iv.LengthNs != length || iv.StartNs != int64(i)*length {
			return fmt.Errorf("intervals[%d] starts at %d ns with length %d ns: intervals must be consecutive from 0, of one positive length", i, iv.StartNs, iv.LengthNs)
		}
		lat, _, _, err := iv.DecodeCompact()
		if err != nil {
			return err
		}
		if c := lat.Count() + lat.OutOfRange(); iv.Failed < 0 || iv.Failed > c {
			return fmt.Errorf("intervals[%d] counts %d failed of %d answers", i, iv.Failed, c)
		}
		n += lat.Count() + lat.OutOfRange()
		failed += iv.Failed
	}
	if whole := r.Latency.Count + r.Latency.OutOfRange; n != whole {
		return fmt.Errorf("intervals hold %d latency values but the latency histogram holds %d", n, whole)
	}
	if all := r.Completed - r.Success; failed > all {
		return fmt.Errorf("intervals count %d failed answers but the run %d", failed, all)
	}
	return nil
}

// Merge combines results of several load workers into one, exactly:
// histograms merged, counts summed, time spans joined. All parts must share
// the model and protocol; parts that are shares of a split load (Worker)
// must have distinct indexes and one count, so no share is counted twice.
// The merged result has no Worker. Parts without one (unsplit runs,
// earlier merges) are not checked against each other.
func Merge(parts []*LoadResult) (*LoadResult, error) {
	if len(parts) == 0 {
		return nil, errors.New("nothing to merge")
	}
	if err := checkShares(parts); err != nil {
		return nil, err
	}
	first := parts[0]
	out := *first
	out.Worker = nil
	out.Targets = nil
	out.StatusCodes = map[string]int64{}
	out.Errors = nil
	out.Workers = 0
	out.TargetRatePerSec = 0
	out.Connections = 0
	out.Scheduled, out.Sent, out.Completed, out.Success, out.Dropped, out.Canceled, out.BytesIn, out.BytesOut = 0, 0, 0, 0, 0, 0, 0, 0
	out.NotSent, out.NotSentReason = 0, ""
	out.Interrupted = false
	if first.Generator != nil {
		g := *first.Generator
		g.Commands, g.Notes = nil, nil
		out.Generator = &g
	}
	lat, svc, lag := latency.NewRecorder(), latency.NewRecorder(), latency.NewRecorder()
	seenTarget := map[string]bool{}
	errCounts := map[[2]string]int64{}
	for i, p := range parts {
		if p.Model != first.Model {
			return nil, fmt.Errorf("part %d is %s loop but part 1 is %s loop: only results of one load model merge", i+1, p.Model, first.Model)
		}
		if p.Protocol != first.Protocol {
			return nil, fmt.Errorf("part %d used %s but part 1 used %s: only results of one protocol merge", i+1, p.Protocol, first.Protocol)
		}
		if err := mergeGenerator(out.Generator, p.Generator, i); err != nil {
			return nil, err
		}
		l, s, g, err := p.Histograms()
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i+1, err)
		}
		if err := errors.Join(lat.Merge(l), svc.Merge(s), lag.Merge(g)); err != nil {
			return nil, err
		}
		for _, t := range p.Targets {
			if !seenTarget[t] {
				seenTarget[t] = true
				out.Targets = append(out.Targets, t)
			}
		}
		for k, v := range p.StatusCodes {
			out.StatusCodes[k] += v
		}
		for _, e := range p.Errors {
			errCounts[[2]string{e.Kind, e.Message}] += e.Count
		}
		out.Workers += p.Workers
		out.TargetRatePerSec += p.TargetRatePerSec
		out.Connections += p.Connections
		out.Scheduled += p.Scheduled
		out.Sent += p.Sent
		out.Completed += p.Completed
		out.Success += p.Success
		out.Dropped += p.Dropped
		out.NotSent += p.NotSent
		if out.NotSentReason == "" {
			out.NotSentReason = p.NotSentReason
		}
		out.Canceled += p.Canceled
		out.BytesIn += p.BytesIn
		out.BytesOut += p.BytesOut
		out.Interrupted = out.Interrupted || p.Interrupted
		out.DurationNs = max(out.DurationNs, p.DurationNs)
		out.WarmupNs = max(out.WarmupNs, p.WarmupNs)
		if p.StartedAt.Before(out.StartedAt) {
			out.StartedAt = p.StartedAt
		}
		if p.EndedAt.After(out.EndedAt) {
			out.EndedAt = p.EndedAt
		}
		if p.Sent > 0 {
			if out.FirstSendNs == 0 || p.FirstSendNs < out.FirstSendNs {
				out.FirstSendNs = p.FirstSendNs
			}
			out.LastSendNs = max(out.LastSendNs, p.LastSendNs)
			out.LastEndNs = max(out.LastEndNs, p.LastEndNs)
		}
	}
	if out.Sent == 0 {
		out.FirstSendNs, out.LastSendNs, out.LastEndNs = 0, 0, 0
	}
	out.Errors = []ErrorCount{}
	for k, v := range errCounts {
		out.Errors = append(out.Errors, ErrorCount{Kind: k[0], Message: k[1], Count: v})
	}
	sortErrors(out.Errors)
	var err error
	if out.Intervals, err = mergeIntervals(parts, out.StartedAt); err != nil {
		return nil, err
	}
	if out.Latency, err = lat.Encode(); err != nil {
		return nil, err
	}
	if out.ServiceTime, err = svc.Encode(); err != nil {
		return nil, err
	}
	if out.ScheduleLag, err = lag.Encode(); err != nil {
		return nil, err
	}
	return &out, nil
}

// mergeIntervals merges the parts' interval histograms onto one time line
// starting at start (the merged window's start): each part's interval goes
// to the merged interval nearest its start in wall-clock time, so when
// workers' windows opened a fraction of an interval apart, a merged
// interval holds answers up to half an interval off its bounds. When a
// part has no intervals (an external generator, an older result) or the
// parts' interval lengths differ, the merge has none: a partial time line
// would misstate the rate per interval.
func mergeIntervals(parts []*LoadResult, start time.Time) ([]IntervalHistograms, error) {
	length := int64(0)
	for _, p := range parts {
		if len(p.Intervals) == 0 {
			return nil, nil
		}
		for _, iv := range p.Intervals {
			if length == 0 {
				length = iv.LengthNs
			}
			if iv.LengthNs != length || length <= 0 {
				return nil, nil
			}
		}
	}
	// Compact histograms: an hour of one-second intervals stays a few MB
	// (full-range recorders would hold 660 KB per interval).
	type recs struct {
		lat, svc, lag *latency.Compact
		failed        *int64
	}
	byIdx := map[int64]recs{}
	last := int64(0)
	for i, p := range parts {
		offset := int64(p.StartedAt.Sub(start))
		for _, iv := range p.Intervals {
			l, s, g, err := iv.DecodeCompact()
			if err != nil {
				return nil, fmt.Errorf("part %d: %w", i+1, err)
			}
			idx := max((offset+iv.StartNs+length/2)/length, 0)
			m, ok := byIdx[idx]
			if !ok {
				m = recs{latency.NewCompact(), latency.NewCompact(), latency.NewCompact(), new(int64)}
				byIdx[idx] = m
			}
			if err := errors.Join(m.lat.Merge(l), m.svc.Merge(s), m.lag.Merge(g)); err != nil {
				return nil, err
			}
			*m.failed += iv.Failed
			last = max(last, idx)
		}
	}
	out := make([]IntervalHistograms, 0, last+1)
	for idx := int64(0); idx <= last; idx++ {
		m, ok := byIdx[idx]
		if !ok {
			m = recs{latency.NewCompact(), latency.NewCompact(), latency.NewCompact(), new(int64)}
		}
		e := IntervalHistograms{StartNs: idx * length, LengthNs: length, Failed: *m.failed}
		var err error
		if e.Latency, err = m.lat.Encode(); err != nil {
			return nil, err
		}
		if e.ServiceTime, err = m.svc.Encode(); err != nil {
			return nil, err
		}
		if e.ScheduleLag, err = m.lag.Encode(); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// checkShares refuses worker shares that cannot come from one split load:
// two with the same index, or different worker counts.
func checkShares(parts []*LoadResult) error {
	byIndex := map[int]int{} // worker index -> part number (from 1)
	countPart := 0
	for i, p := range parts {
		w := p.Worker
		if w == nil {
			continue
		}
		if countPart == 0 {
			countPart = i + 1
		} else if c := parts[countPart-1].Worker.Count; w.Count != c {
			return fmt.Errorf("part %d is worker %d of %d but part %d is worker %d of %d: only shares of one split load merge",
				i+1, w.Index, w.Count, countPart, parts[countPart-1].Worker.Index, c)
		}
		if other, dup := byIndex[w.Index]; dup {
			return fmt.Errorf("parts %d and %d are both worker %d of %d: a share would be counted twice", other, i+1, w.Index, w.Count)
		}
		byIndex[w.Index] = i + 1
	}
	return nil
}

// mergeGenerator adds part i's generator to the merge's (out, from part
// 1): all parts must come from one generator, or all from meshbench's
// engine (nil).
func mergeGenerator(out, p *Generator, i int) error {
	name := func(g *Generator) string {
		if g == nil {
			return "meshbench's engine"
		}
		return g.Name + " " + g.Version
	}
	if (out == nil) != (p == nil) || (out != nil && (out.Name != p.Name || out.Version != p.Version)) {
		return fmt.Errorf("part %d was measured by %s but part 1 by %s: only results of one load generator merge", i+1, name(p), name(out))
	}
	if out == nil {
		return nil
	}
	out.Commands = append(out.Commands, p.Commands...)
	// Each distinct description once. They hold "; " themselves
	// (vegeta's), so a description is looked for whole, between the
	// separators, not by splitting at them.
	if h := out.Histograms; h != p.Histograms && !strings.HasPrefix(h, p.Histograms+"; ") &&
		!strings.Contains(h, "; "+p.Histograms+"; ") && !strings.HasSuffix(h, "; "+p.Histograms) {
		out.Histograms += "; " + p.Histograms
	}
	out.PartialHistograms = out.PartialHistograms || p.PartialHistograms
	for _, n := range p.Notes {
		if !slices.Contains(out.Notes, n) {
			out.Notes = append(out.Notes, n)
		}
	}
	return nil
}

// LoadProgress is a load's running figures (`meshbench load
// --progress-file`), rewritten every second: since the start of the
// measured window (ElapsedNs negative during the warm-up).
type LoadProgress struct {
	ElapsedNs  int64   `json:"elapsed_ns"`
	Sent       int64   `json:"sent"`
	Completed  int64   `json:"completed"`
	Errors     int64   `json:"errors"`
	Dropped    int64   `json:"dropped"`
	P50Ns      int64   `json:"p50_ns"`
	P99Ns      int64   `json:"p99_ns"`
	RatePerSec float64 `json:"rate_per_sec"`
	// Workers is how many workers' figures MergeProgress merged (0: one
	// worker's own figures).
	Workers int `json:"workers,omitempty"`
}
