package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
)

// Platform runs a plan's cells on the local lab (platform.Platform):
// consecutive cells of one Topology share one lab, started for the first,
// kept up while the next cells fit it, stopped before a cell of another
// topology or at the end, and rebuilt if one of its processes died. Each
// such lab has its directory under DIR/labs/ and a record in the plan
// manifest.
type Platform struct {
	// Options are every cell's options but its settings and OutDir, which
	// each cell sets: the binaries, the substrate, the log, the version.
	Options Options
	labs    labs
}

// NewPlatform returns the lab platform running every cell with o.
func NewPlatform(o Options) *Platform { return &Platform{Options: o} }

// Name is results.PlatformLocal.
func (*Platform) Name() string { return results.PlatformLocal }

// RunCell runs r.Cell on the lab that fits it.
func (p *Platform) RunCell(ctx context.Context, r platform.CellRun) (*platform.Result, error) {
	p.labs.planDir, p.labs.m = r.PlanDir, r.Manifest
	o := p.Options
	o.Settings, o.OutDir = r.Cell.Settings, r.Dir
	return p.labs.run(ctx, r.Cell, o)
}

// Teardown stops the lab, if one is up.
func (p *Platform) Teardown(why string) { p.labs.stop(why) }

// labs keeps the one lab consecutive cells of a topology share.
type labs struct {
	planDir string
	m       *results.PlanManifest
	lab     *Lab
	rec     *results.LabRecord
}

// run runs cell c (options lo) on the current lab when it fits and is
// healthy, on a new lab when c has a topology, or on its own otherwise.
func (ls *labs) run(ctx context.Context, c platform.Cell, lo Options) (*platform.Result, error) {
	if c.Topology == "" {
		ls.stop("")
		return platformResult(Run(ctx, lo))
	}
	if ls.lab != nil {
		if ls.rec.Topology != c.Topology || !ls.lab.Fits(lo) {
			ls.stop("")
		} else if err := ls.lab.Healthy(); err != nil {
			ls.stop("given up after a cell: " + err.Error())
		}
	}
	if ls.lab == nil {
		dir, err := newLabDir(ls.planDir, c.Topology)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(ls.planDir, dir)
		rec := &results.LabRecord{Dir: rel, Topology: c.Topology, Started: time.Now().UTC()}
		ls.m.Labs = append(ls.m.Labs, rec)
		lab, err := Start(ctx, lo, dir)
		if err != nil {
			rec.Stopped, rec.Error = time.Now().UTC(), "failed to start: "+errString(err)
			return nil, err
		}
		ls.lab, ls.rec = lab, rec
	}
	ls.rec.Cells = append(ls.rec.Cells, c.ID)
	return platformResult(ls.lab.Run(ctx, lo))
}

func platformResult(res *Result, err error) (*platform.Result, error) {
	if res == nil {
		return nil, err
	}
	return &platform.Result{Dir: res.Dir, Manifest: res.Manifest, Load: res.Load}, err
}

// stop stops the current lab, if any, noting why when why is not empty.
func (ls *labs) stop(why string) {
	if ls.lab == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := ls.lab.Stop(ctx)
	ls.rec.Stopped = time.Now().UTC()
	switch {
	case err != nil:
		ls.rec.Error = strings.TrimPrefix(why+"; ", "; ") + "stopping: " + errString(err)
	case why != "":
		ls.rec.Error = why
	}
	ls.lab, ls.rec = nil, nil
}

// newLabDir makes a new directory DIR/labs/KEY.N for a lab of topology key.
func newLabDir(planDir, key string) (string, error) {
	base := filepath.Join(planDir, results.LabsDir)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	for n := 1; ; n++ {
		dir := filepath.Join(base, key+"."+strconv.Itoa(n))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", err
		}
	}
}

// errString is err on one line, as the plan manifest records errors.
func errString(err error) string {
	if err == nil {
		return "no result"
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
