package loadgen

import (
	"fmt"
	"math"
	"strconv"
)

// WorkerShareStep is the smallest unit a rate is split in between workers:
// one micro-request per second (1e-6/s), the lowest rate ParseRate accepts.
// A share is a whole number of steps, so it prints exactly with six
// decimals and ParseRate reads it back exactly.
const WorkerShareStep = 1e-6

// shareStepsPerSec is 1/WorkerShareStep. Dividing a whole number of steps
// by it (an exact float64) gives the float64 nearest the decimal share.
const shareStepsPerSec = 1e6

// maxShareUnits bounds the integer split: a total above it (2^53 steps,
// about 9e9/s) cannot be held exactly as steps in a float64, and is split
// evenly without rounding instead.
const maxShareUnits = 1 << 53

// WorkerShare returns worker index's part of a total rate (requests per
// second) spread over workers load generators, so that W generators
// together send the total: the total is counted in WorkerShareSteps, each
// worker gets the same whole number of steps, and the remainder goes one
// step each to the first workers. 100/s over 3 gives 33.333334, 33.333333
// and 33.333333; the shares sum to the total (rounded to a step) and differ
// by at most one step. One worker gets the total unchanged. Out-of-range
// arguments (workers < 1, index outside [0, workers), a total that is not a
// positive finite number) give 0.
func WorkerShare(total float64, workers, index int) float64 {
	if workers < 1 || index < 0 || index >= workers || !(total > 0) || math.IsInf(total, 1) {
		return 0
	}
	if workers == 1 {
		return total
	}
	units := math.Round(total * shareStepsPerSec)
	if units >= maxShareUnits {
		return total / float64(workers)
	}
	n := int64(units)
	share := n / int64(workers)
	if int64(index) < n%int64(workers) {
		share++
	}
	return float64(share) / shareStepsPerSec
}

// WorkerRate is worker index's share of total spread over workers load
// generators (WorkerShare), as the exact Rate that worker paces at: the
// total itself for one worker. It fails when the share is below
// WorkerShareStep (a rate too low for that many workers) or the arguments
// are out of range. `meshbench load --workers` and the kube platform's
// load Job both split a rate with it, so they agree on every share.
func WorkerRate(total Rate, workers, index int) (Rate, error) {
	if workers == 1 && index == 0 {
		return total, nil
	}
	share := WorkerShare(total.PerSecond(), workers, index)
	if share <= 0 {
		return Rate{}, fmt.Errorf("worker %d's share (%s/s) is below the minimum of %g per second", index, strconv.FormatFloat(share, 'f', -1, 64), WorkerShareStep)
	}
	return ParseRate(strconv.FormatFloat(share, 'f', 6, 64))
}

// WorkerConnections returns worker index's part of total connections
// spread over workers load generators, the remainder one each to the first
// workers (16 over 3: 6, 5, 5), and at least 1: a worker needs a
// connection even when there are more workers than connections.
// Out-of-range workers or index give 1.
func WorkerConnections(total, workers, index int) int {
	if workers < 1 || index < 0 || index >= workers || total < 1 {
		return 1
	}
	share := total / workers
	if index < total%workers {
		share++
	}
	return max(share, 1)
}
