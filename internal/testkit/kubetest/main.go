package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/nodes"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// RequireEnv names the environment variable that turns a missing toolset
// from a skip into a failure (`make test` and CI set it to 1).
const RequireEnv = "MESHBENCH_REQUIRE_K8S"

// startTimeout bounds Require's Start: about 15 s is usual on two cores,
// far more means something is wrong.
const startTimeout = 3 * time.Minute

// shared is the one cluster of a test package that uses Main.
var shared struct {
	mu      sync.Mutex
	inMain  bool
	opts    Options
	started bool
	c       *Cluster
	err     error
}

// M runs a package's tests: *testing.M, or a wrapper that also cleans up
// after them.
type M interface{ Run() int }

// Main runs a test package's tests with one shared cluster, started by the
// first Require (so a run that selects no Kubernetes test starts nothing)
// and stopped after the last test. Call it from TestMain:
//
//	func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}) }
//
// When a test failed, the cluster's files (logs) are kept and their place
// printed. Main does not return.
func Main(m M, o Options) {
	shared.mu.Lock()
	shared.inMain, shared.opts = true, o
	shared.mu.Unlock()

	code := m.Run()

	shared.mu.Lock()
	c := shared.c
	shared.mu.Unlock()
	if c != nil {
		if code != 0 {
			c.KeepDir()
			fmt.Fprintf(os.Stderr, "kubetest: tests failed; cluster logs kept in %s\n", c.Dir)
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: stopping the cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// Require returns the package's shared cluster, starting it on first use.
// Under -short it skips the test (testutil.RealPart).
// When the binaries are missing the test is skipped with a message saying
// how to build them, or fails if MESHBENCH_REQUIRE_K8S=1. Any other start
// failure fails the test (and every later Require).
func Require(t testing.TB) *Cluster {
	t.Helper()
	testutil.RealPart(t, "a Kubernetes control plane (kubetest)")
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.inMain {
		t.Fatal("kubetest.Require needs kubetest.Main in the package's TestMain (it stops the cluster)")
	}
	if !shared.started {
		shared.started = true
		o := shared.opts
		if o.Log == nil && testing.Verbose() {
			o.Log = os.Stderr
		}
		if o.RealNodes && o.Meshbench == "" {
			o.Meshbench = testutil.BuildMeshbench(t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		shared.c, shared.err = Start(ctx, o)
		cancel()
	}
	if shared.err != nil {
		skip, msg := requireOutcome(shared.err, os.Getenv(RequireEnv))
		if skip {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	return shared.c
}

// requireOutcome decides between skipping and failing for a Start error.
func requireOutcome(err error, requireEnv string) (skip bool, msg string) {
	if errors.Is(err, ErrNoBinaries) || errors.Is(err, nodes.ErrMissing) {
		if requireEnv == "1" {
			return false, fmt.Sprintf("%v (%s=1, so this fails instead of skipping)", err, RequireEnv)
		}
		return true, err.Error()
	}
	return false, fmt.Sprintf("starting the test cluster: %v", err)
}

// Poll calls check every 250 ms until it reports done, failing t with
// check's last description after timeout: for the cluster's eventual
// states (pods Ready, metrics served, namespaces gone).
func Poll(ctx context.Context, t testing.TB, timeout time.Duration, what string, check func() (done bool, state string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		done, state := check()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last state: %s", what, ctx.Err(), state)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
