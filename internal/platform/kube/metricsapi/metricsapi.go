package metricsapi

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// DefaultMetricsPeriod is the polling period when MetricsOptions.Period is
// 0: 10 s, the seed tool's and metrics-server's smallest resolution.
const DefaultMetricsPeriod = 10 * time.Second

// ErrMetricsUnavailable is returned (wrapped) by SampleNow and Run when
// metrics.k8s.io is not served (no APIService: 404) or not answering (503)
// before it has answered once.
var ErrMetricsUnavailable = errors.New("metrics.k8s.io is not available: is metrics-server installed?")

// MetricsOptions configure a MetricsSampler.
type MetricsOptions struct {
	// Period is the polling period (0: DefaultMetricsPeriod). Polling
	// faster than metrics-server's resolution only finds stale samples.
	Period time.Duration
	// Classifier labels every container (required).
	Classifier *Classifier
	// Namespaces restricts pods to these namespaces (empty: all). Node
	// metrics are always read for every node.
	Namespaces []string
	// Raw, when not nil, receives the raw data: one JSON line per API
	// object seen per round (RawRecord), one Write per round. After a
	// failed write the sampler writes no more and Err and Run return the
	// error.
	Raw io.Writer
	// Clock is the sampler's clock (nil: sample.SystemClock()).
	Clock sample.Clock
	// OnRound, when not nil, is called with every round after it is kept,
	// on the goroutine that took it; it must not modify the round.
	OnRound func(sample.Round)
	// OnNodeRound, when not nil, is called with every round's fresh node
	// samples after OnRound, on the same goroutine (the live view's node
	// lines); it must not modify them.
	OnNodeRound func(sample.NodeRound)
}

// RoundError is an API error of one round: the round went on without what
// the failed call would have given.
type RoundError struct {
	Round int       `json:"round"`
	Time  time.Time `json:"time"`
	// Op is what failed: "list pods", "list PodMetrics", "list
	// NodeMetrics" or "list nodes".
	Op    string `json:"op"`
	Error string `json:"error"`
}

// Raw record kinds (RawRecord.Kind).
const (
	RawPodMetrics  = "PodMetrics"
	RawNodeMetrics = "NodeMetrics"
	RawError       = "error"
	RawRound       = "round" // the last line of every round
)

// RawRecord is one line of the raw metrics file: an object as
// metrics.k8s.io gave it (usage quantities as strings, exactly), an API
// error, or the end of a round. Every line carries its round's index and
// the time the round started.
type RawRecord struct {
	Kind    string `json:"kind"`
	Round   int    `json:"round"`
	TUnixNs int64  `json:"t_unix_ns"`

	// PodMetrics and NodeMetrics: the object's namespace (pods) and name,
	// its timestamp and window, and whether it was stale (the same
	// timestamp and window as the previous one of the same pod or node;
	// "stale" is present only when true).
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Timestamp time.Time `json:"timestamp,omitzero"`
	WindowNs  int64     `json:"window_ns,omitempty"`
	Stale     bool      `json:"stale,omitempty"`
	// PodMetrics: the pod's UID and node from the pod list (empty when it
	// was not listed) and its containers with their classification.
	UID        string         `json:"uid,omitempty"`
	Node       string         `json:"node,omitempty"`
	Containers []RawContainer `json:"containers,omitempty"`
	// NodeMetrics: the usage and, when known, the node's allocatable.
	Usage       corev1.ResourceList `json:"usage,omitempty"`
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// error: what failed and why.
	Op    string `json:"op,omitempty"`
	Error string `json:"error,omitempty"`

	// round: its wall time.
	WallNs int64 `json:"wall_ns,omitempty"`
}

// RawContainer is one container of a PodMetrics record.
type RawContainer struct {
	Name      string              `json:"name"`
	Usage     corev1.ResourceList `json:"usage"`
	Component string              `json:"component"`
	Category  string              `json:"category"`
}

// MetricsSampler polls metrics.k8s.io (PodMetrics and NodeMetrics) and
// the pods, and turns every fresh pod sample into sample.Samples, one per
// container (PID 0), labelled by a Classifier. Its methods are safe to
// call while Run runs.
//
// metrics-server scrapes every kubelet once per --metric-resolution (15 s
// by default, 10 s at the least) and serves, for each pod, the CPU rate
// over the window between its last two scrapes and the memory working set
// of the last one, with the window's end (timestamp) and length (window).
// Until its next scrape it serves the same sample again: polled faster
// than that, most answers are duplicates (65% of the seed tool's data,
// polled every 10 s against 15 s). They are kept out of the figures:
//
//   - A pod sample is stale when its (timestamp, window) equals the last
//     one seen for the same namespace/name. metrics-server stores one
//     point per namespace/name, not per UID: a pod recreated under the
//     same name is served its predecessor's sample until the next scrape,
//     so keying by UID would count that sample twice, while a genuinely
//     new sample always has a new timestamp. (The raw records keep the
//     UID, from the pod list.) A stale sample is written to the raw file
//     with "stale": true and counted (Stale) but yields no sample.Sample:
//     it is never counted twice. Node samples the same, by node name.
//   - Memory is the working set (the container's cgroup memory use minus
//     inactive file pages), neither RSS nor PSS. A sample.Sample carries
//     it in RSSBytes and in PSSBytes with HasPSS, so that Summarize fills
//     its memory figures (which are PSS) every round and what reads them
//     (data-plane memory per replica) works unchanged; tables render it
//     with sample.WorkingSet, which says what Mem is.
//   - CPU is the usage quantity in millicores, exact to the nanocore
//     (metrics-server reports nanocores, e.g. "250123456n"; see
//     CPUMillicores); quantities are never parsed by hand.
//   - A sample's Time is the API's timestamp (whole seconds: the end of
//     the window its CPU covers); a round's Time is when it polled.
//
// A round that found new samples for some pods and the old ones for others
// sums only the new ones, so its category figures miss the stale pods
// (MixedRounds counts such rounds). metrics-server stores the pods of one
// scrape at once, so this happens only when a kubelet's own per-container
// statistics lag (cAdvisor's housekeeping) or a node's scrape failed.
//
// The raw data come first: every object seen, stale or not, every API
// error and every round's end are written as JSON lines (RawRecord), and
// FromRaw rebuilds from them exactly what the sampler returns.
type MetricsSampler struct {
	metrics metricsclient.Interface
	core    kubernetes.Interface
	o       MetricsOptions

	roundMu     sync.Mutex // one round at a time; guards the fields below
	last        map[string]sampleKey
	allocatable map[string]corev1.ResourceList
	answered    bool // metrics.k8s.io has answered once

	mu       sync.Mutex // guards the fields below
	state    rawState
	records  [][]RawRecord // per round, for Within
	writeErr error
}

// sampleKey identifies a metrics sample: its window's end and length.
type sampleKey struct {
	t      time.Time
	window time.Duration
}

// NewMetricsSampler returns a sampler reading metrics from metrics and
// pods and nodes from core.
func NewMetricsSampler(metrics metricsclient.Interface, core kubernetes.Interface, o MetricsOptions) (*MetricsSampler, error) {
	if metrics == nil || core == nil {
		return nil, errors.New("metrics sampler: a metrics and a core clientset are required")
	}
	if o.Classifier == nil {
		return nil, errors.New("metrics sampler: a classifier is required")
	}
	if o.Period <= 0 {
		o.Period = DefaultMetricsPeriod
	}
	if o.Clock == nil {
		o.Clock = sample.SystemClock()
	}
	o.Namespaces = slices.Compact(slices.Sorted(slices.Values(o.Namespaces)))
	return &MetricsSampler{metrics: metrics, core: core, o: o,
		last: map[string]sampleKey{}, allocatable: map[string]corev1.ResourceList{}}, nil
}

// Period returns the polling period.
func (s *MetricsSampler) Period() time.Duration { return s.o.Period }

// Run takes a round at once, then one every period until ctx is done. It
// returns the error of SampleNow when metrics.k8s.io is not available
// (ErrMetricsUnavailable), the error of a failed raw write, or nil. API
// errors of a round are recorded (Errors), never returned.
func (s *MetricsSampler) Run(ctx context.Context) error {
	tick, stop := s.o.Clock.Tick(s.o.Period)
	defer stop()
	if _, err := s.SampleNow(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return s.Err()
		case <-tick:
			if ctx.Err() != nil {
				return s.Err()
			}
			if _, err := s.SampleNow(ctx); err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
}

// SampleNow takes one round, keeps it, writes its raw records and returns
// it. The error is ErrMetricsUnavailable (wrapped, with the API's answer)
// when metrics.k8s.io answers 404 or 503 before it has ever answered, or
// ctx's error when ctx ended during the round (which is then not kept).
// Every other API error is recorded in the round (Errors) and the round
// goes on without what the failed call would have given.
func (s *MetricsSampler) SampleNow(ctx context.Context) (sample.Round, error) {
	s.roundMu.Lock()
	recs, err := s.poll(ctx)
	if err != nil {
		s.roundMu.Unlock()
		return sample.Round{}, err
	}
	s.mu.Lock()
	writing := s.o.Raw != nil && s.writeErr == nil
	s.mu.Unlock()
	var werr error
	if writing {
		var buf []byte
		for _, rec := range recs {
			b, err := json.Marshal(rec)
			if err != nil {
				werr = err
				break
			}
			buf = append(append(buf, b...), '\n')
		}
		if werr == nil {
			_, werr = s.o.Raw.Write(buf)
		}
	}
	s.mu.Lock()
	if werr != nil {
		s.writeErr = fmt.Errorf("writing raw metrics: %w", werr)
	}
	s.state.add(recs)
	s.records = append(s.records, recs)
	r := s.state.rounds[len(s.state.rounds)-1]
	nr := s.state.nodes[len(s.state.nodes)-1]
	s.mu.Unlock()
	s.roundMu.Unlock()
	if s.o.OnRound != nil {
		s.o.OnRound(r)
	}
	if s.o.OnNodeRound != nil {
		s.o.OnNodeRound(nr)
	}
	return r, nil
}

// poll reads the API once and returns the round's raw records, the stale
// flags set. Called with roundMu held.
func (s *MetricsSampler) poll(ctx context.Context) ([]RawRecord, error) {
	s.mu.Lock()
	index := len(s.state.rounds)
	s.mu.Unlock()
	start := s.o.Clock.Now()
	t := start.UnixNano()
	var recs []RawRecord
	var canceled error
	fail := func(op string, err error) {
		if ctx.Err() != nil {
			canceled = ctx.Err()
			return
		}
		recs = append(recs, RawRecord{Kind: RawError, Round: index, TUnixNs: t, Op: op, Error: err.Error()})
	}
	unavailable := func(op string, err error) error {
		if !s.answered && (apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err)) {
			return fmt.Errorf("%w (%s: %v)", ErrMetricsUnavailable, op, err)
		}
		return nil
	}

	// Pods first: a pod in the metrics is then (nearly always) in the
	// list, since metrics-server reports a pod only after two scrapes.
	pods, podsErr := s.listPods(ctx)
	if podsErr != nil {
		fail("list pods", podsErr)
	}
	podMetrics, pmErr := s.listPodMetrics(ctx)
	if pmErr != nil {
		if err := unavailable("listing PodMetrics", pmErr); err != nil && ctx.Err() == nil {
			return nil, err
		}
		fail("list PodMetrics", pmErr)
	} else {
		s.answered = true
	}
	nodeMetrics, nmErr := s.metrics.MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{})
	if nmErr != nil {
		if err := unavailable("listing NodeMetrics", nmErr); err != nil && ctx.Err() == nil {
			return nil, err
		}
		fail("list NodeMetrics", nmErr)
	} else {
		s.answered = true
	}

	if nmErr == nil && slices.ContainsFunc(nodeMetrics.Items, func(nm metricsv1beta1.NodeMetrics) bool {
		_, ok := s.allocatable[nm.Name]
		return !ok
	}) {
		if err := s.listNodes(ctx); err != nil {
			fail("list nodes", err)
		}
	}
	if canceled != nil {
		return nil, canceled
	}

	// A round whose pod list failed takes no pod samples (nothing could be
	// classified) and leaves every pod's last sample as it was.
	if podsErr == nil && pmErr == nil {
		byName := make(map[string]*corev1.Pod, len(pods))
		for i := range pods {
			byName[pods[i].Namespace+"/"+pods[i].Name] = &pods[i]
		}
		slices.SortFunc(podMetrics, func(a, b metricsv1beta1.PodMetrics) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		for i := range podMetrics {
			recs = append(recs, s.podRecord(index, t, &podMetrics[i], byName))
		}
	}
	if nmErr == nil {
		items := nodeMetrics.Items
		slices.SortFunc(items, func(a, b metricsv1beta1.NodeMetrics) int { return cmp.Compare(a.Name, b.Name) })
		for i := range items {
			recs = append(recs, s.nodeRecord(index, t, &items[i]))
		}
	}
	recs = append(recs, RawRecord{Kind: RawRound, Round: index, TUnixNs: t, WallNs: int64(s.o.Clock.Now().Sub(start))})
	return recs, nil
}

func (s *MetricsSampler) listPods(ctx context.Context) ([]corev1.Pod, error) {
	// ResourceVersion "0": served from the API server's cache, which is
	// recent enough to classify and spares etcd.
	opts := metav1.ListOptions{ResourceVersion: "0"}
	if len(s.o.Namespaces) == 0 {
		l, err := s.core.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	var out []corev1.Pod
	for _, ns := range s.o.Namespaces {
		l, err := s.core.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		out = append(out, l.Items...)
	}
	return out, nil
}

func (s *MetricsSampler) listPodMetrics(ctx context.Context) ([]metricsv1beta1.PodMetrics, error) {
	if len(s.o.Namespaces) == 0 {
		l, err := s.metrics.MetricsV1beta1().PodMetricses(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	var out []metricsv1beta1.PodMetrics
	for _, ns := range s.o.Namespaces {
		l, err := s.metrics.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		out = append(out, l.Items...)
	}
	return out, nil
}

// listNodes refreshes the allocatable resources of every node.
func (s *MetricsSampler) listNodes(ctx context.Context) error {
	l, err := s.core.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	for _, n := range l.Items {
		s.allocatable[n.Name] = n.Status.Allocatable
	}
	return nil
}

// fresh records k as the last sample of key and reports whether it
// differs from the one before.
func (s *MetricsSampler) fresh(key string, k sampleKey) bool {
	prev, ok := s.last[key]
	s.last[key] = k
	return !ok || !prev.t.Equal(k.t) || prev.window != k.window
}

func (s *MetricsSampler) podRecord(index int, t int64, pm *metricsv1beta1.PodMetrics, pods map[string]*corev1.Pod) RawRecord {
	pod, listed := pods[pm.Namespace+"/"+pm.Name]
	if !listed {
		// Not in the pod list (created after it): classify by what the
		// metrics carry, the namespace, name and labels.
		pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pm.Namespace, Name: pm.Name, Labels: pm.Labels}}
	}
	rec := RawRecord{Kind: RawPodMetrics, Round: index, TUnixNs: t, Namespace: pm.Namespace, Name: pm.Name,
		Timestamp: pm.Timestamp.UTC(), WindowNs: int64(pm.Window.Duration),
		UID: string(pod.UID), Node: pod.Spec.NodeName}
	rec.Stale = !s.fresh("pod "+pm.Namespace+"/"+pm.Name, sampleKey{rec.Timestamp, pm.Window.Duration})
	ctrs := slices.Clone(pm.Containers)
	slices.SortFunc(ctrs, func(a, b metricsv1beta1.ContainerMetrics) int { return cmp.Compare(a.Name, b.Name) })
	for _, c := range ctrs {
		_, component, category := s.o.Classifier.Classify(pod, c.Name)
		rec.Containers = append(rec.Containers, RawContainer{Name: c.Name, Usage: c.Usage, Component: component, Category: category})
	}
	return rec
}

func (s *MetricsSampler) nodeRecord(index int, t int64, nm *metricsv1beta1.NodeMetrics) RawRecord {
	rec := RawRecord{Kind: RawNodeMetrics, Round: index, TUnixNs: t, Name: nm.Name,
		Timestamp: nm.Timestamp.UTC(), WindowNs: int64(nm.Window.Duration), Usage: nm.Usage}
	if a, ok := s.allocatable[nm.Name]; ok {
		rec.Allocatable = corev1.ResourceList{}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := a[r]; ok {
				rec.Allocatable[r] = q
			}
		}
	}
	rec.Stale = !s.fresh("node "+nm.Name, sampleKey{rec.Timestamp, nm.Window.Duration})
	return rec
}

// Rounds returns the rounds taken so far, oldest first, one per poll; a
// round whose samples were all stale has none. The returned slice is a
// copy; the rounds' own slices must not be modified.
func (s *MetricsSampler) Rounds() []sample.Round {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.state.rounds)
}

// Nodes returns the fresh node samples of every round, oldest first.
func (s *MetricsSampler) Nodes() []sample.NodeRound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.state.nodes)
}

// Stale returns how many pod and node samples were stale (seen again with
// the same timestamp and window, and not counted).
func (s *MetricsSampler) Stale() (pods, nodes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.stalePods, s.state.staleNodes
}

// MixedRounds returns how many rounds had both fresh and stale pod
// samples: their sums miss the stale pods.
func (s *MetricsSampler) MixedRounds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.mixed
}

// Errors returns the API errors of every round, oldest first.
func (s *MetricsSampler) Errors() []RoundError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.state.errors)
}

// Err returns the first error writing the raw records, or nil.
func (s *MetricsSampler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeErr
}

// Within returns the rounds' samples whose whole window, [Time − window,
// Time], lies inside [from, to] (a zero from or to leaves that end open),
// keeping each round's index and time; rounds left without samples are
// left out, and so are gaps.
func (s *MetricsSampler) Within(from, to time.Time) []sample.Round {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample.Round
	for _, recs := range s.records {
		r := buildRounds(recs).rounds
		if len(r) == 0 {
			continue
		}
		round := r[0]
		windows := sampleWindows(recs)
		var kept []sample.Sample
		for i, x := range round.Samples {
			begin := x.Time.Add(-windows[i])
			if (!from.IsZero() && begin.Before(from)) || (!to.IsZero() && x.Time.After(to)) {
				continue
			}
			kept = append(kept, x)
		}
		if len(kept) > 0 {
			round.Samples, round.Gaps = kept, nil
			out = append(out, round)
		}
	}
	return out
}

// NodesWithin returns the fresh node samples whose whole window lies
// inside [from, to], by Within's rule, each round's left without samples
// left out.
func (s *MetricsSampler) NodesWithin(from, to time.Time) []sample.NodeRound {
	var out []sample.NodeRound
	for _, r := range s.Nodes() {
		var kept []sample.NodeSample
		for _, n := range r.Nodes {
			if (!from.IsZero() && n.Time.Add(-n.Window).Before(from)) || (!to.IsZero() && n.Time.After(to)) {
				continue
			}
			kept = append(kept, n)
		}
		if len(kept) > 0 {
			r.Nodes = kept
			out = append(out, r)
		}
	}
	return out
}

// sampleWindows lists the window of every sample buildRounds makes of
// one round's records, in the same order.
func sampleWindows(recs []RawRecord) []time.Duration {
	var out []time.Duration
	for _, rec := range recs {
		if rec.Kind != RawPodMetrics || rec.Stale {
			continue
		}
		for _, c := range rec.Containers {
			if _, _, ok := containerUsage(c); ok {
				out = append(out, time.Duration(rec.WindowNs))
			}
		}
	}
	return out
}

// RawRun is what raw records hold: the rounds and node rounds the
// sampler made of them, the stale counts and the API errors.
type RawRun struct {
	Rounds      []sample.Round
	Nodes       []sample.NodeRound
	StalePods   int
	StaleNodes  int
	MixedRounds int
	Errors      []RoundError
}

// FromRaw rebuilds, from raw records (ReadRaw), exactly what the sampler
// that wrote them returned from Rounds, Nodes, Stale, MixedRounds and
// Errors. It is a pure function of the records.
func FromRaw(recs []RawRecord) RawRun {
	st := buildRounds(recs)
	return RawRun{Rounds: st.rounds, Nodes: st.nodes, StalePods: st.stalePods, StaleNodes: st.staleNodes,
		MixedRounds: st.mixed, Errors: st.errors}
}

func buildRounds(recs []RawRecord) rawState {
	var st rawState
	byRound := map[int][]RawRecord{}
	var order []int
	for _, rec := range recs {
		if _, ok := byRound[rec.Round]; !ok {
			order = append(order, rec.Round)
		}
		byRound[rec.Round] = append(byRound[rec.Round], rec)
	}
	slices.Sort(order)
	for _, i := range order {
		st.add(byRound[i])
	}
	return st
}

// rawState accumulates rounds from their raw records.
type rawState struct {
	rounds                []sample.Round
	nodes                 []sample.NodeRound
	stalePods, staleNodes int
	mixed                 int
	errors                []RoundError
}

// add builds one round from its records (all of the same round).
func (st *rawState) add(recs []RawRecord) {
	if len(recs) == 0 {
		return
	}
	t := time.Unix(0, recs[0].TUnixNs).UTC()
	r := sample.Round{Index: recs[0].Round, Time: t}
	nr := sample.NodeRound{Index: r.Index, Time: t, Nodes: []sample.NodeSample{}}
	fresh, stale := 0, 0
	for _, rec := range recs {
		switch rec.Kind {
		case RawPodMetrics:
			r.Overhead.Processes += len(rec.Containers)
			if rec.Stale {
				stale++
				continue
			}
			fresh++
			for _, c := range rec.Containers {
				cpu, mem, ok := containerUsage(c)
				if !ok {
					continue // never filled in
				}
				r.Samples = append(r.Samples, sample.Sample{
					Target: sample.Target{Name: rec.Namespace + "/" + rec.Name + "/" + c.Name,
						Component: c.Component, Category: c.Category},
					Time:          rec.Timestamp,
					CPUMillicores: cpu,
					RSSBytes:      mem,
					PSSBytes:      mem,
					HasPSS:        true,
				})
			}
		case RawNodeMetrics:
			if rec.Stale {
				st.staleNodes++
				continue
			}
			n := sample.NodeSample{Name: rec.Name, Time: rec.Timestamp, Window: time.Duration(rec.WindowNs)}
			n.CPUMillicores, n.MemoryBytes, _ = ResourceUsage(rec.Usage)
			n.AllocatableCPUMillicores, n.AllocatableMemoryBytes, _ = ResourceUsage(rec.Allocatable)
			nr.Nodes = append(nr.Nodes, n)
		case RawError:
			st.errors = append(st.errors, RoundError{Round: rec.Round, Time: t, Op: rec.Op, Error: rec.Error})
		case RawRound:
			r.Overhead.Wall = time.Duration(rec.WallNs)
		}
	}
	st.stalePods += stale
	if fresh > 0 && stale > 0 {
		st.mixed++
	}
	st.rounds = append(st.rounds, r)
	st.nodes = append(st.nodes, nr)
}

func containerUsage(c RawContainer) (cpuMillicores float64, memBytes uint64, ok bool) {
	return ResourceUsage(c.Usage)
}

// ResourceUsage converts a usage list: CPU in millicores, exact to the nanocore;
// memory in bytes. ok is false unless both are there.
func ResourceUsage(l corev1.ResourceList) (cpuMillicores float64, memBytes uint64, ok bool) {
	cpu, okCPU := l[corev1.ResourceCPU]
	mem, okMem := l[corev1.ResourceMemory]
	if okCPU {
		cpuMillicores = CPUMillicores(cpu)
	}
	if okMem {
		memBytes = MemoryBytes(mem)
	}
	return cpuMillicores, memBytes, okCPU && okMem
}

// CPUMillicores converts a CPU quantity to millicores (1000 = one core),
// exact to the nanocore: "250123456n" is 250.123456, "1500m" and "1.5"
// are 1500.
func CPUMillicores(q resource.Quantity) float64 {
	return float64(q.ScaledValue(resource.Nano)) / 1e6
}

// MemoryBytes converts a memory quantity to bytes ("64Mi" is 67108864),
// rounding a fraction up as resource.Quantity does; a negative quantity
// is 0.
func MemoryBytes(q resource.Quantity) uint64 {
	return uint64(max(q.Value(), 0))
}

// MaxRawLineBytes is the longest raw line ReadRaw accepts.
const MaxRawLineBytes = 1 << 20

// ReadRaw reads raw records written by a MetricsSampler (MetricsOptions.Raw).
func ReadRaw(r io.Reader) ([]RawRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxRawLineBytes)
	var out []RawRecord
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec RawRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("reading raw metrics, line %d: %w", n, err)
		}
		switch rec.Kind {
		case RawPodMetrics, RawNodeMetrics, RawError, RawRound:
		default:
			return nil, fmt.Errorf("reading raw metrics, line %d: unknown kind %q", n, rec.Kind)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading raw metrics: %w", err)
	}
	return out, nil
}

// PodSampleCounts are the fresh and stale pod samples the sampler has seen
// over the whole run, and whether metrics.k8s.io ever answered. Call it
// after the sampler has stopped.
func (s *MetricsSampler) PodSampleCounts() (fresh, stale int, answered bool) {
	s.roundMu.Lock()
	answered = s.answered
	s.roundMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, recs := range s.records {
		for _, rec := range recs {
			if rec.Kind == RawPodMetrics {
				if rec.Stale {
					stale++
				} else {
					fresh++
				}
			}
		}
	}
	return fresh, stale, answered
}
