package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
)

// Lab is a running topology: certificates and Envoy configs written and
// validated, every app and Envoy started and ready. Cells run on it one
// after the other (Lab.Run); Run is Start, one cell and Stop.
//
// Reusing a lab across cells is faithful when the cells differ only in
// what the load does (rate, repetition): the processes, configs and
// addresses are the same ones a fresh lab would have. What carries over
// is the processes' state: pooled upstream connections, allocator heaps
// grown by an earlier cell (memory is a process's current PSS), Envoy's
// cumulative histograms (which is why every cell starts a new stats
// interval, see envoy.StartInterval, and counters are reset). Each cell
// still waits for the lab to be idle and warms up before it measures.
type Lab struct {
	opts Options
	topo *topology.Topology
	// dir holds pki/, envoy/ (configs) and logs/ of the apps and Envoys.
	dir   string
	sup   *envoy.Supervisor
	procs []*envoy.Proc
	apps  []*child
	// net is the lab's network on a substrate (Options.Substrate); nil on
	// loopback.
	net Network

	mu sync.Mutex
	// phases are the prepare phases, given to the first cell's manifest.
	phases    []results.Phase
	validated []string
	// hopList are the hops that log (Options.Hops).
	hopList []hops.Hop
	started time.Time
	cells   int
	stopped bool
}

// Start brings o.Mesh's topology up with its files in dir (created if
// needed): the first step of a run, for a runner that runs several cells
// on one topology. Stop it when done, whatever happens; on error Start
// has stopped everything it started.
func Start(ctx context.Context, o Options, dir string) (*Lab, error) {
	if err := o.defaultMeshbench(); err != nil {
		return nil, err
	}
	topo, err := planTopology(o)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{dir, filepath.Join(dir, results.EnvoyDir), filepath.Join(dir, results.LogsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	l := newLab(o, topo, dir)
	if err := l.prepare(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return nil, errors.Join(err, l.stop(stopCtx))
	}
	return l, nil
}

// planTopology plans o's topology and checks it can start: an Envoy when
// it needs one, every address free.
func planTopology(o Options) (*topology.Topology, error) {
	topo, err := planTopologyChecked(o)
	if err != nil {
		return nil, &PrecheckError{Err: err}
	}
	return topo, nil
}

// PrecheckError is why a cell cannot start here, found before anything
// was made (no results directory, no process): an address the loopback
// lab needs is taken, a mode the substrate does not run, no Envoy.
type PrecheckError struct{ Err error }

func (e *PrecheckError) Error() string { return e.Err.Error() }
func (e *PrecheckError) Unwrap() error { return e.Err }

// planTopologyChecked is planTopology's work: the topology, and whether
// everything it needs is here.
func planTopologyChecked(o Options) (*topology.Topology, error) {
	topo, err := topology.Plan(o.Mesh)
	if err != nil {
		return nil, err
	}
	if o.Substrate == nil && o.Mesh.Mode == topology.ModeLinkerd {
		return nil, errors.New("mesh linkerd runs only on the netns substrate (the real linkerd2-proxy in its pod's network namespace, with proxy-init's capture; the loopback lab has no imitation of it): use --substrate netns, as root")
	}
	if o.Substrate != nil {
		// Its own network: no address of the host's is used, and it says
		// which Envoys remain (Up).
		return topo, o.Substrate.Supports(o.Mesh)
	}
	if len(topo.Proxies) > 0 && o.Envoy == nil {
		return nil, errors.New("no Envoy binary: install it with `make envoy`")
	}
	if err := envoy.CheckAddrsFree(bindPlan(topo)); err != nil {
		return nil, err
	}
	return topo, nil
}

func newLab(o Options, topo *topology.Topology, dir string) *Lab {
	return &Lab{opts: o, topo: topo, dir: dir, started: time.Now().UTC()}
}

// Cells is how many cells have run on the lab.
func (l *Lab) Cells() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cells
}

// Fits reports whether a cell with options o can run on the lab: the
// same topology options and binaries.
func (l *Lab) Fits(o Options) bool {
	if o.defaultMeshbench() != nil {
		return false
	}
	return reflect.DeepEqual(o.Mesh, l.opts.Mesh) && o.Envoy == l.opts.Envoy && o.Meshbench == l.opts.Meshbench &&
		o.AppConcurrency == l.opts.AppConcurrency && o.AppServiceTime == l.opts.AppServiceTime && o.BodySize == l.opts.BodySize &&
		o.Substrate == l.opts.Substrate && reflect.DeepEqual(o.AppFaults, l.opts.AppFaults) && o.Hops == l.opts.Hops
}

// Healthy returns an error when a process of the lab has exited.
func (l *Lab) Healthy() error {
	l.mu.Lock()
	stopped := l.stopped
	l.mu.Unlock()
	if stopped {
		return errors.New("the lab has been stopped")
	}
	return l.somethingDied()
}

func (l *Lab) logf(format string, a ...any) {
	if l.opts.Log != nil {
		fmt.Fprintf(l.opts.Log, format+"\n", a...)
	}
}

// phase starts one of the lab's own phases (prepare…); the returned func
// ends it.
func (l *Lab) phase(name string) func() {
	enter(l.opts, name)
	p := results.Phase{Name: name, Started: time.Now().UTC()}
	return func() {
		p.Ended = time.Now().UTC()
		l.mu.Lock()
		l.phases = append(l.phases, p)
		l.mu.Unlock()
	}
}

// enter announces that phase name starts: to o.Log and to o.Observer.
func enter(o Options, name string) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "phase %s\n", name)
	}
	if o.Observer != nil {
		o.Observer.Phase(name)
	}
}

// prepare writes certificates and configs, validates them, and starts the
// apps and the Envoys.
//
// Its steps are sub-phases (prepare/render, prepare/validate,
// prepare/apps, prepare/envoys), so a slow start says where the time went.
func (l *Lab) prepare(ctx context.Context) error {
	defer l.phase("prepare")()
	if l.opts.Substrate != nil {
		endNet := l.phase("prepare/network")
		net, topo, err := l.opts.Substrate.Up(ctx, l.topo, l.dir, l.opts.Log)
		endNet()
		if err != nil {
			return err
		}
		l.net, l.topo = net, topo
		if len(topo.Proxies) > 0 && l.opts.Envoy == nil {
			return errors.New("no Envoy binary: install it with `make envoy`")
		}
	}
	configs := map[string]string{}
	if len(l.topo.Proxies) > 0 {
		endRender := l.phase("prepare/render")
		certs, err := l.writeCerts(filepath.Join(l.dir, "pki"))
		if err != nil {
			return err
		}
		rendered, err := l.render(certs.Paths)
		if err != nil {
			return err
		}
		for name, js := range rendered {
			path := filepath.Join(l.dir, results.EnvoyDir, name+".json")
			if err := os.WriteFile(path, js, 0o644); err != nil {
				return err
			}
			configs[name] = path
		}
		endRender()
		endValidate := l.phase("prepare/validate")
		err = l.validateConfigs(ctx, configs)
		endValidate()
		if err != nil {
			return err
		}
	}
	endApps := l.phase("prepare/apps")
	// Apps first: sidecars and node proxies connect to them.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, 8)
	for _, p := range l.topo.ServerPods() {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			svc := l.topo.Svc(p.Service)
			args := append([]string{svc.Serve, "--listen", p.AppAddr().String(), "--grace", "2s"}, callArgs(p)...)
			args = append(args, l.opts.appArgs(svc.Serve)...)
			c, err := startServe(ctx, l.enter(p.Name), l.opts.Meshbench, p.Name+" app", svc.Component,
				filepath.Join(l.dir, results.LogsDir, p.Name+".log"), args...)
			mu.Lock()
			defer mu.Unlock()
			if c != nil {
				l.apps = append(l.apps, c)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	endApps()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(l.topo.Proxies) == 0 {
		return nil
	}
	defer l.phase("prepare/envoys")()
	// The Envoys' admin address files live in the lab's directory, not in
	// /tmp: a lab killed with SIGKILL leaves nothing outside its results.
	runDir := filepath.Join(l.dir, results.EnvoyDir, "run")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	l.sup = envoy.NewSupervisor(l.opts.Envoy, envoy.SupervisorOptions{RunDir: runDir})
	var specs []envoy.Spec
	for _, p := range l.topo.Proxies {
		spec := envoy.Spec{Name: p.Name, ConfigPath: configs[p.Name], AdminAddr: p.Admin.String(),
			LogPath: filepath.Join(l.dir, results.LogsDir, p.Name+".log")}
		if l.net != nil {
			spec.In, spec.Gid = l.net.EnvoyIn(p)
		}
		specs = append(specs, spec)
	}
	start := time.Now()
	procs, err := l.sup.StartAll(ctx, specs)
	if err != nil {
		return err
	}
	l.procs = procs
	l.logf("%d Envoys ready in %v", len(procs), time.Since(start).Round(time.Millisecond))
	return nil
}

// validateConfigs runs `envoy --mode validate` on every config when there
// are few, and on one config per (role, component) when there are many:
// configs of one role differ only in addresses.
func (l *Lab) validateConfigs(ctx context.Context, configs map[string]string) error {
	seen := map[string]bool{}
	var names []string
	for _, p := range l.topo.Proxies {
		key := string(p.Role) + "/" + p.Component
		if len(l.topo.Proxies) > 12 && seen[key] {
			continue
		}
		seen[key] = true
		names = append(names, p.Name)
	}
	var errs []error
	for _, n := range names {
		if err := envoy.Validate(ctx, l.opts.Envoy, configs[n]); err != nil {
			//lint:ignore ST1005 Envoy is a name, capitalised wherever meshbench prints it
			errs = append(errs, fmt.Errorf("Envoy config of %s: %w", n, err))
		}
	}
	l.validated = names
	return errors.Join(errs...)
}

// startInterval resets every Envoy's counters and starts a new histogram
// interval, so the stats collected at the end of a cell are the cell's.
func (l *Lab) startInterval(ctx context.Context) error {
	var errs []error
	for _, p := range l.procs {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := envoy.StartInterval(cctx, p.AdminAddr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

func (l *Lab) somethingDied() error {
	for _, p := range l.procs {
		select {
		case <-p.Done():
			//lint:ignore ST1005 Envoy is a name, capitalised wherever meshbench prints it
			return fmt.Errorf("Envoy %s died: %v", p.Name, p.ExitErr())
		default:
		}
	}
	for _, c := range l.apps {
		if err := c.unexpectedExit(); err != nil {
			return err
		}
	}
	if l.net != nil {
		return l.net.Died()
	}
	return nil
}

// Stop stops every process of the lab (Envoys, then apps), announced as
// phase teardown. It may be called more than once.
func (l *Lab) Stop(ctx context.Context) error {
	enter(l.opts, "teardown")
	return l.stop(ctx)
}

func (l *Lab) stop(ctx context.Context) error {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	var errs []error
	if l.sup != nil {
		if err := l.sup.StopAll(ctx); err != nil {
			errs = append(errs, err)
		}
		if l.net != nil {
			for _, p := range l.topo.Proxies {
				envoy.ForgetAdmin(p.Admin.String())
			}
		}
	}
	stopChildren(l.apps)
	if l.net != nil {
		if err := l.net.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopChildren stops cs in parallel, each with a 3 s grace; nil entries
// are skipped.
func stopChildren(cs []*child) {
	var wg sync.WaitGroup
	for _, c := range cs {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.stop(3 * time.Second) }()
	}
	wg.Wait()
}
