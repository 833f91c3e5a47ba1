package platform

import (
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/results"
)

// Observer follows a cell as it runs, fed the same way by every platform
// (local.Options.Observer, kube.Options.Observer): the phases the cell
// enters, its sampling rounds, and on a cluster the nodes' rounds and the
// metrics source it chose. Its methods are called from the cell's
// goroutines (the sampler's, a timer's, a log follower's), possibly at
// once: an Observer guards its own state. Embed ObserverBase to follow
// only some events; a new event is a method here and on ObserverBase.
type Observer interface {
	// Phase: the cell enters phase name: prepare (and its steps,
	// prepare/…), idle, warmup, measure, drain, collect, teardown.
	Phase(name string)
	// Round: a sampling round of the cell's processes (the lab's /proc)
	// or pods (a cluster's kubelet counters or metrics.k8s.io), as it is
	// taken.
	Round(r sample.Round)
	// NodeRound: a cluster's node samples from metrics.k8s.io, as they are
	// taken.
	NodeRound(r sample.NodeRound)
	// Source: the pods' metrics source a cluster cell chose, in a few
	// words: "kubelet (/metrics/resource)" or "metrics.k8s.io".
	Source(name string)
}

// LoadObserver is an Observer that also follows the load's running
// figures, about every second while it runs (meshbench's engine only): on
// the lab from the load's progress file (`meshbench load
// --progress-file`, logs/load-progress.json in the cell's results), on a
// cluster from the workers' progress lines in their logs, merged
// (results.MergeProgress). A platform asks the load for them only when its
// observer is a LoadObserver, since on the lab they leave a file.
type LoadObserver interface {
	Observer
	LoadProgress(p results.LoadProgress)
}

// ObserverBase ignores every event of an Observer: embed it to follow
// only some.
type ObserverBase struct{}

func (ObserverBase) Phase(string)               {}
func (ObserverBase) Round(sample.Round)         {}
func (ObserverBase) NodeRound(sample.NodeRound) {}
func (ObserverBase) Source(string)              {}
