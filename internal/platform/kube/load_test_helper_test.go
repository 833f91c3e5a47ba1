package kube

import (
	"testing"

	"github.com/meshbench/meshbench/internal/load/loadgen"
)

// testLoad is the load s names ("100", "max"), for a test's options.
func testLoad(tb testing.TB, s string) loadgen.Load {
	tb.Helper()
	l, err := loadgen.ParseLoad(s)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}
