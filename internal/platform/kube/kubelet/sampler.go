package kubelet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// DefaultPeriod is the reading period when Options.Period is 0: 1 s, the
// local lab's.
const DefaultPeriod = time.Second

// DefaultPath is the kubelet's resource metrics path.
const DefaultPath = "/metrics/resource"

// AnnotationPath on a node overrides DefaultPath, as metrics-server reads
// it (kwok's emulated nodes serve their metrics at
// /metrics/nodes/NODE/metrics/resource).
const AnnotationPath = "metrics.k8s.io/resource-metrics-path"

// maxParallel bounds the node requests of one round in flight at once.
const maxParallel = 8

// Options configure a Sampler.
type Options struct {
	// Period is the reading period (0: DefaultPeriod).
	Period time.Duration
	// Classify labels a container (required): its component and its
	// category (one of sample.Categories). pod has at least its
	// namespace and name; its labels, owners and node when it was listed.
	Classify func(pod *corev1.Pod, container string) (component, category string)
	// Raw, when not nil, receives every record, one Write per round.
	// After a failed write the sampler writes no more and Err and Run
	// return the error.
	Raw io.Writer
	// Clock is the sampler's clock (nil: sample.SystemClock()).
	Clock sample.Clock
	// Timeout bounds each node request (0: 10 s).
	Timeout time.Duration
	// OnRound, when not nil, gets every round's intervals after it is
	// kept, on the sampler's goroutine; it must not modify the round.
	OnRound func(sample.Round)
}

// Sampler reads every node's /metrics/resource through the API server's
// node proxy (/api/v1/nodes/NODE/proxy/metrics/resource; RBAC: get on
// nodes/proxy) every period, keeps every series of every answer as a raw
// record (Record) with the read time, the counter's own timestamp and its
// lag, and turns the cumulative counters into per-interval CPU (Rounds).
// Its methods are safe to call while Run runs.
//
// A reading whose CPU counter timestamp did not advance since the same
// series' previous reading is stale: kept in the raw file, counted, and
// never used (the kubelet's statistics are refreshed by cAdvisor's
// housekeeping, about every 10–15 s per container, whatever the
// reading period). Without timestamps in the exposition (kwok's
// emulation) a reading is timed by when it was read and is never stale.
type Sampler struct {
	core kubernetes.Interface
	o    Options

	roundMu sync.Mutex // one round at a time; guards the fields below
	lastTS  map[string]int64
	pods    map[string]podInfo // "ns/pod" -> classification input

	mu       sync.Mutex // guards the fields below
	records  []Record
	rounds   int
	state    intervalState
	writeErr error
}

type podInfo struct{ pod *corev1.Pod }

// New returns a sampler reading nodes, pods and the node proxy from core.
func New(core kubernetes.Interface, o Options) (*Sampler, error) {
	if core == nil {
		return nil, errors.New("kubelet sampler: a core clientset is required")
	}
	if o.Classify == nil {
		return nil, errors.New("kubelet sampler: a classifier is required")
	}
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Clock == nil {
		o.Clock = sample.SystemClock()
	}
	return &Sampler{core: core, o: o, lastTS: map[string]int64{}, pods: map[string]podInfo{},
		state: intervalState{s: newSeries()}}, nil
}

// Period returns the reading period.
func (s *Sampler) Period() time.Duration { return s.o.Period }

// Run takes a round at once, then one every period until ctx is done. It
// returns the error of a failed raw write, or nil; request errors are
// recorded (Errors), never returned.
func (s *Sampler) Run(ctx context.Context) error {
	tick, stop := s.o.Clock.Tick(s.o.Period)
	defer stop()
	s.SampleNow(ctx)
	for {
		select {
		case <-ctx.Done():
			return s.Err()
		case <-tick:
			if ctx.Err() != nil {
				return s.Err()
			}
			s.SampleNow(ctx)
			if err := s.Err(); err != nil {
				return err
			}
		}
	}
}

// nodeAnswer is one node's answer in a round.
type nodeAnswer struct {
	name       string
	sent, read time.Time
	scrape     *Scrape
	err        error
}

// SampleNow takes one round, keeps it, writes its records and returns its
// intervals. A round cut short by ctx is not kept.
func (s *Sampler) SampleNow(ctx context.Context) sample.Round {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	s.mu.Lock()
	index := s.rounds
	s.mu.Unlock()
	start := s.o.Clock.Now()
	cpu0 := processCPUTime()
	t := start.UnixNano()
	var recs []Record
	fail := func(op string, err error) {
		recs = append(recs, Record{Kind: RawError, Round: index, TUnixNs: t, Op: op, Error: err.Error()})
	}

	nodes, err := s.core.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	var answers []nodeAnswer
	if err != nil {
		fail("list nodes", err)
	} else {
		answers = s.readNodes(ctx, nodes.Items)
	}
	if ctx.Err() != nil {
		return sample.Round{}
	}
	// Classify: list the pods again only when an unknown one shows up.
	unknown := false
	for _, a := range answers {
		if a.scrape != nil {
			for _, c := range a.scrape.Containers {
				if _, ok := s.pods[c.Namespace+"/"+c.Pod]; !ok {
					unknown = true
				}
			}
		}
	}
	if unknown {
		if err := s.listPods(ctx); err != nil {
			fail("list pods", err)
		}
	}
	for _, a := range answers {
		if a.err != nil {
			fail("read node "+a.name, a.err)
			continue
		}
		recs = append(recs, s.records1(index, t, a)...)
	}
	cpu := processCPUTime() - cpu0
	recs = append(recs, Record{Kind: RawRound, Round: index, TUnixNs: t,
		WallNs: int64(s.o.Clock.Now().Sub(start)), CPUNs: int64(cpu)})

	s.mu.Lock()
	s.rounds++
	if s.o.Raw != nil && s.writeErr == nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for i := range recs {
			if err := enc.Encode(&recs[i]); err != nil {
				s.writeErr = err
			}
		}
		if s.writeErr == nil {
			if _, err := s.o.Raw.Write(buf.Bytes()); err != nil {
				s.writeErr = fmt.Errorf("writing raw kubelet metrics: %w", err)
			}
		}
	}
	for i := range recs {
		s.state.add(&recs[i])
	}
	s.records = append(s.records, recs...)
	r := s.state.rounds[len(s.state.rounds)-1]
	s.mu.Unlock()
	if s.o.OnRound != nil {
		s.o.OnRound(r)
	}
	return r
}

// readNodes reads every node's metrics, maxParallel at a time, in node
// name order.
func (s *Sampler) readNodes(ctx context.Context, nodes []corev1.Node) []nodeAnswer {
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	out := make([]nodeAnswer, len(nodes))
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			n := &nodes[i]
			rctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
			defer cancel()
			sent := s.o.Clock.Now()
			sc, err := ReadNode(rctx, s.core, n)
			out[i] = nodeAnswer{name: n.Name, sent: sent, read: s.o.Clock.Now(), scrape: sc, err: err}
		}()
	}
	wg.Wait()
	return out
}

// ReadNode reads and parses one node's resource metrics through the API
// server's node proxy, at the path of the node's AnnotationPath, else
// DefaultPath.
func ReadNode(ctx context.Context, core kubernetes.Interface, node *corev1.Node) (*Scrape, error) {
	path := DefaultPath
	if p := node.Annotations[AnnotationPath]; p != "" {
		path = "/" + strings.TrimPrefix(p, "/")
	}
	body, err := core.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + node.Name + "/proxy" + path).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("GET /api/v1/nodes/%s/proxy%s: %w", node.Name, path, err)
	}
	sc, err := Parse(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	return sc, nil
}

func (s *Sampler) listPods(ctx context.Context) error {
	l, err := s.core.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	clear(s.pods)
	for i := range l.Items {
		p := &l.Items[i]
		s.pods[p.Namespace+"/"+p.Name] = podInfo{pod: p}
	}
	return nil
}

// records1 turns one node's answer into records, the stale flags and lags
// set. Called with roundMu held.
func (s *Sampler) records1(index int, t int64, a nodeAnswer) []Record {
	sent, read := a.sent.UnixNano(), a.read.UnixNano()
	var out []Record
	stamp := func(rec *Record, key string, v *Value) {
		if v == nil {
			return
		}
		rec.CPUSeconds, rec.HasCPU = v.Value, true
		if !v.Timestamp.IsZero() {
			ms := v.Timestamp.UnixMilli()
			rec.CPUTimestampMs = ms
			lag := read - v.Timestamp.UnixNano()
			rec.LagNs = &lag
			prev, seen := s.lastTS[key]
			rec.Stale = seen && prev == ms
			s.lastTS[key] = ms
		}
	}
	mem := func(rec *Record, v *Value) {
		if v == nil {
			return
		}
		rec.MemoryBytes, rec.HasMemory = v.Value, true
		if !v.Timestamp.IsZero() {
			rec.MemoryTimestampMs = v.Timestamp.UnixMilli()
		}
	}
	for _, c := range a.scrape.Containers {
		pi, listed := s.pods[c.Namespace+"/"+c.Pod]
		pod := pi.pod
		if !listed {
			pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Pod}}
		}
		component, category := s.o.Classify(pod, c.Container)
		rec := Record{Kind: RawContainer, Round: index, TUnixNs: t, Node: a.name, SentUnixNs: sent, ReadUnixNs: read,
			Namespace: c.Namespace, Pod: c.Pod, Container: c.Container, UID: string(pod.UID),
			Component: component, Category: category}
		stamp(&rec, a.name+" "+c.Key(), c.CPUSeconds)
		mem(&rec, c.MemoryBytes)
		if c.StartTime != nil {
			rec.StartTimeSeconds = c.StartTime.Value
		}
		out = append(out, rec)
	}
	for _, p := range a.scrape.Pods {
		rec := Record{Kind: RawPod, Round: index, TUnixNs: t, Node: a.name, SentUnixNs: sent, ReadUnixNs: read, Namespace: p.Namespace, Pod: p.Pod}
		stamp(&rec, a.name+" pod "+p.Namespace+"/"+p.Pod, p.CPUSeconds)
		mem(&rec, p.MemoryBytes)
		out = append(out, rec)
	}
	if a.scrape.NodeCPU != nil || a.scrape.NodeMemory != nil {
		rec := Record{Kind: RawNode, Round: index, TUnixNs: t, Node: a.name, SentUnixNs: sent, ReadUnixNs: read}
		stamp(&rec, a.name+" node", a.scrape.NodeCPU)
		mem(&rec, a.scrape.NodeMemory)
		out = append(out, rec)
	}
	return out
}

// Records returns every record so far, in the order written.
func (s *Sampler) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

// Rounds returns the intervals of every round so far (Intervals).
func (s *Sampler) Rounds() []sample.Round {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.state.rounds)
}

// Within returns the interval samples lying inside [from, to] (Within).
func (s *Sampler) Within(from, to time.Time) []sample.Round {
	s.mu.Lock()
	rounds, recs := slices.Clone(s.state.rounds), slices.Clone(s.records)
	s.mu.Unlock()
	return Within(rounds, recs, from, to)
}

// Errors returns the failed requests of every round, oldest first.
func (s *Sampler) Errors() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	for _, r := range s.records {
		if r.Kind == RawError {
			out = append(out, r)
		}
	}
	return out
}

// Err returns the first error writing the raw records, or nil.
func (s *Sampler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeErr
}

// Probe says whether the kubelet counters can be read: the caller may get
// nodes/proxy (a SelfSubjectAccessReview) and a Ready node's
// /metrics/resource answers with CPU counters. nil means yes; the error
// says what is missing.
func Probe(ctx context.Context, core kubernetes.Interface) error {
	review, err := core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "nodes", Subresource: "proxy"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking whether nodes/proxy get is allowed: %w", err)
	}
	if !review.Status.Allowed {
		why := review.Status.Reason
		if why == "" {
			why = "no RBAC rule grants it"
		}
		return fmt.Errorf("get on nodes/proxy is not allowed (%s): grant it to read the kubelet's counters", why)
	}
	nodes, err := core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !nodeReady(n) {
			continue
		}
		sc, err := ReadNode(ctx, core, n)
		if err != nil {
			return err
		}
		if len(sc.Containers) == 0 && sc.NodeCPU == nil {
			return fmt.Errorf("node %s: /metrics/resource has no CPU counters", n.Name)
		}
		return nil
	}
	return errors.New("no Ready node to read /metrics/resource from")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
