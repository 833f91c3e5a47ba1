package kubelet

import (
	"testing"

	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestMain gives the package's cluster tests one shared throw-away
// cluster (started on first use).
func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}) }
