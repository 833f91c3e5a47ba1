package netlab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
)

// sharedAPI is the lab API server a plan's labs share (Substrate
// ShareAPI): started for the first lab whose control plane needs one,
// brought back to its baseline at each lab's end (labapi's Reset; each
// lab's own CRDs by ApplyCRDs), stopped by the Substrate's Close. One
// lab at a time holds it; a lab that finds it held, or whose services
// need another range, starts one of its own.
type sharedAPI struct {
	mu   sync.Mutex
	srv  *labapi.Server
	cidr netip.Prefix
	busy bool
	// labs is how many labs it has served.
	labs int
}

// apiUse is how a lab got its API server, for the manifest.
type apiUse struct {
	srv    *labapi.Server
	shared bool
	// lab counts the labs the shared server served, this one included;
	// wait is what getting it cost this lab (a reused server: nothing
	// but the check that it runs).
	lab  int
	wait time.Duration
}

// record is the manifest's api_server: whether the plan's labs share
// it, when it started and its processes (one server per plan: the same
// PIDs and start in every cell's manifest), and its start-up.
func (u apiUse) record() map[string]any {
	etcd, api := u.srv.PIDs()
	return map[string]any{
		"shared": u.shared, "started": u.srv.Started.Format(time.RFC3339Nano), "ready_s": u.srv.StartTime.Seconds(),
		"etcd_pid": etcd, "kube_apiserver_pid": api, "lab": u.lab, "wait_s": u.wait.Seconds(),
	}
}

// labAPI is the API server lab l's control plane runs against: the
// plan's shared one when the substrate shares it (s.ShareAPI) and it is
// free for l, else one of l's own in dir/labapi. The lab's Close gives
// the shared one back, reset to its baseline (or stops it if the reset
// failed: the next lab starts another), or stops l's own.
func (s *Substrate) labAPI(ctx context.Context, l *Lab, dir string) (apiUse, error) {
	t0 := time.Now()
	cidr := ServiceCIDR(l.Opts.Subnet)
	if s.ShareAPI {
		u, ok, err := s.sharedAPIFor(ctx, l, cidr)
		if err != nil || ok {
			u.wait = time.Since(t0)
			return u, err
		}
	}
	api, err := labapi.Start(ctx, labapi.Options{Dir: filepath.Join(dir, "labapi"), ServiceCIDR: cidr, Log: l.Opts.Log})
	if err != nil {
		return apiUse{}, err
	}
	l.sub.OnClose("lab API server", api.Close)
	return apiUse{srv: api, lab: 1, wait: time.Since(t0)}, nil
}

// sharedAPIFor hands the shared server to lab l (ok), starting it (again)
// when there is none, it died, or it serves another service range; not
// ok when another lab holds it.
func (s *Substrate) sharedAPIFor(ctx context.Context, l *Lab, cidr netip.Prefix) (apiUse, bool, error) {
	sh := &s.api
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.busy {
		return apiUse{}, false, nil
	}
	if sh.srv != nil && (sh.srv.Died() != nil || sh.cidr != cidr) {
		_ = sh.srv.Close()
		sh.srv = nil
	}
	if sh.srv == nil {
		dir, err := os.MkdirTemp("", "meshbench-labapi-")
		if err != nil {
			return apiUse{}, false, err
		}
		srv, err := labapi.Start(ctx, labapi.Options{Dir: dir, ServiceCIDR: cidr, Log: l.Opts.Log})
		if err != nil {
			return apiUse{}, false, errors.Join(err, os.RemoveAll(dir))
		}
		if _, err := srv.Snapshot(ctx); err != nil {
			return apiUse{}, false, errors.Join(fmt.Errorf("lab API server's baseline: %w", err), srv.Close())
		}
		sh.srv, sh.cidr, sh.labs = srv, cidr, 0
	}
	sh.busy = true
	sh.labs++
	srv := sh.srv
	l.sub.OnClose("the lab's objects on the plan's lab API server", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		t0 := time.Now()
		err := srv.Reset(ctx)
		if l.Opts.Log != nil && err == nil {
			fmt.Fprintf(l.Opts.Log, "lab API server: the lab's objects deleted, back to its baseline in %v\n", time.Since(t0).Round(time.Millisecond))
		}
		sh.mu.Lock()
		defer sh.mu.Unlock()
		sh.busy = false
		if err != nil && sh.srv == srv {
			// Not clean: the next lab gets a new one.
			err = errors.Join(err, srv.Close())
			sh.srv = nil
		}
		return err
	})
	return apiUse{srv: srv, shared: true, lab: sh.labs}, true, nil
}

// NeedsAPI: a topology with options o runs its control plane against a
// lab API server on this substrate (istiod for Istio's modes, Linkerd's
// controllers for linkerd, as ControlPlane says).
func (s *Substrate) NeedsAPI(o topology.Options) bool {
	switch o.Mode {
	case topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint:
		return s.IstiodRuns()
	case topology.ModeLinkerd:
		return s.LinkerdControllersRun()
	}
	return false
}

// Close stops the plan's shared lab API server, if one runs (after the
// plan's last cell that needs it, or when the plan stops early). Safe to
// call twice.
func (s *Substrate) Close() error {
	sh := &s.api
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.srv == nil {
		return nil
	}
	err := sh.srv.Close()
	sh.srv = nil
	return err
}
