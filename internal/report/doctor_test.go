package report

import (
	"bytes"
	"testing"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestDoctorTable pins doctor's table and its count of failed checks.
func TestDoctorTable(t *testing.T) {
	checks := []DoctorCheck{
		{Name: "envoy", Status: "ok", Detail: "/usr/bin/envoy 1.40.0"},                           // a check that passed
		{Name: "netns substrate", Status: "warn", Detail: "not root: loopback substrate only"},   // a warning does not fail
		{Name: "linkerd2-proxy", Status: "FAIL", Detail: "not found: give --linkerd-proxy PATH"}, // a failure is counted
		{Name: "ztunnel", Status: "FAIL", Detail: "sha256 mismatch"},                             // and so is a second one
	}
	var b bytes.Buffer
	failed, err := DoctorTable(&b, checks)
	if err != nil {
		t.Fatal(err)
	}
	if failed != 2 {
		t.Errorf("failed %d; want 2", failed)
	}
	testutil.Golden(t, "doctor.txt.golden", b.Bytes())
}
