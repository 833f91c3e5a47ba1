package results

import (
	"testing"
)

// TestProgressLine: a progress line reads back as what was written; the
// log's other lines are not progress lines; a damaged one is an error.
func TestProgressLine(t *testing.T) {
	p := LoadProgress{ElapsedNs: 3e9, Sent: 300, Completed: 299, Errors: 1, P50Ns: 410_000, P99Ns: 1_900_000, RatePerSec: 100}
	got, ok, err := ParseProgressLine(append(ProgressLine(p), '\n'))
	if !ok || err != nil || got != p {
		t.Fatalf("round trip: %+v %v %v, want %+v", got, ok, err, p)
	}
	for _, tt := range []struct {
		line   string
		ok     bool
		hasErr bool
	}{
		// The JSON result's first line.
		{"{", false, false},
		// A warning before the result.
		{"warning: something", false, false},
		// The prefix with a cut JSON document (a log line torn apart).
		{ProgressLinePrefix + `{"sent": 3`, true, true},
		// The prefix with a value of the wrong type.
		{ProgressLinePrefix + `{"sent": "many"}`, true, true},
	} {
		_, ok, err := ParseProgressLine([]byte(tt.line))
		if ok != tt.ok || (err != nil) != tt.hasErr {
			t.Errorf("%q: ok %v err %v, want ok %v error %v", tt.line, ok, err, tt.ok, tt.hasErr)
		}
	}
}

// FuzzParseProgressLine: any line is read without a panic; a line that
// reads as progress prints back to a line that reads the same.
func FuzzParseProgressLine(f *testing.F) {
	f.Add([]byte(ProgressLine(LoadProgress{Sent: 1})))
	f.Add([]byte("{"))
	f.Add([]byte(ProgressLinePrefix + "null"))
	f.Fuzz(func(t *testing.T, line []byte) {
		p, ok, err := ParseProgressLine(line)
		if !ok || err != nil {
			return
		}
		again, ok, err := ParseProgressLine(ProgressLine(p))
		if !ok || err != nil || again != p {
			t.Fatalf("%q: %+v, printed and read again %+v %v %v", line, p, again, ok, err)
		}
	})
}

// TestMergeProgress: counts and rates summed, the shortest elapsed time,
// the highest percentiles, the number of workers.
func TestMergeProgress(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []LoadProgress
		want LoadProgress
	}{
		// One worker: its own figures, exact percentiles.
		{"one", []LoadProgress{{ElapsedNs: 5e9, Sent: 500, Completed: 500, P50Ns: 400, P99Ns: 900, RatePerSec: 100}},
			LoadProgress{ElapsedNs: 5e9, Sent: 500, Completed: 500, P50Ns: 400, P99Ns: 900, RatePerSec: 100, Workers: 1}},
		// Two workers, the second started a second later and slower.
		{"two", []LoadProgress{
			{ElapsedNs: 5e9, Sent: 500, Completed: 499, Errors: 1, P50Ns: 400, P99Ns: 900, RatePerSec: 100},
			{ElapsedNs: 4e9, Sent: 400, Completed: 400, Dropped: 2, P50Ns: 600, P99Ns: 800, RatePerSec: 100}},
			LoadProgress{ElapsedNs: 4e9, Sent: 900, Completed: 899, Errors: 1, Dropped: 2, P50Ns: 600, P99Ns: 900, RatePerSec: 200, Workers: 2}},
		// None yet.
		{"none", nil, LoadProgress{}},
	} {
		if got := MergeProgress(tt.in); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
