package kube

import (
	"testing"

	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestMain gives the package's tests one shared throw-away cluster
// (kubetest.Require starts it on first use; a run that selects no cluster
// test starts nothing). Tests that use it create their own namespaces and
// delete them when done.
func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}) }
