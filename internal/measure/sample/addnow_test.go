package sample

import (
	"os"
	"testing"
)

// TestAddNow: a process added with AddNow has its baseline read at once,
// so the very next round charges it (Add's first round is only a
// baseline); a process that cannot be read is refused.
func TestAddNow(t *testing.T) {
	s := New(0, nil)
	s.Self.PID = 0
	if err := s.AddNow(Target{PID: os.Getpid(), Name: "tool", Component: "load", Category: CategoryLoad}); err != nil {
		t.Fatal(err)
	}
	if r := s.SampleNow(); len(r.Samples) != 1 || r.Samples[0].Name != "tool" {
		t.Errorf("first round after AddNow: samples %+v, want one of tool", r.Samples)
	}
	added := New(0, nil)
	added.Self.PID = 0
	if err := added.Add(Target{PID: os.Getpid(), Name: "tool", Component: "load", Category: CategoryLoad}); err != nil {
		t.Fatal(err)
	}
	if r := added.SampleNow(); len(r.Samples) != 0 {
		t.Errorf("first round after Add: %d samples, want none (a baseline)", len(r.Samples))
	}
	if err := s.AddNow(Target{PID: 1 << 30, Name: "gone", Component: "load", Category: CategoryLoad}); err == nil {
		t.Error("AddNow of a PID that does not exist: no error")
	}
	if err := s.AddNow(Target{PID: os.Getpid(), Name: "again", Component: "load", Category: CategoryLoad}); err == nil {
		t.Error("AddNow of a PID already sampled: no error")
	}
}
