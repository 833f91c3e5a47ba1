package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// RunSchema names the version of a run results directory's manifest.
const RunSchema = "meshbench.run/v1"

// ResourcesSchema names the version of a run's resources.json (its
// "schema" key): the measured window's rule and the resource summary
// (local: "window", "summary"; kube: also "nodes" and "counters").
const ResourcesSchema = "meshbench.resources/v1"

// Files inside a run results directory. Raw data first: everything a report
// shows is recomputed from these.
const (
	ManifestFile   = "manifest.json"    // RunManifest
	LoadFile       = "load.json"        // LoadResult (schema/load-result.v1.schema.json)
	SamplesFile    = "samples.jsonl"    // one resource sample per line
	ResourcesFile  = "resources.json"   // resource summary (min/max/avg per process, component, category)
	EnvoyDir       = "envoy"            // NAME.json (config) and NAME.stats.json (admin /stats at the end)
	EnvoyStatsFile = "envoy-stats.json" // proxy name → envoy.ProxyStats, extracted from NAME.stats.json
	// NodeProxyStatsFile holds the substrate's node proxies' own counters
	// over the cell (ztunnel's Prometheus metrics as deltas): proxy name →
	// NodeProxyStats; NodeProxyDir their raw scrapes (NAME.start.txt and
	// NAME.end.txt).
	NodeProxyStatsFile = "node-proxy-stats.json"
	NodeProxyDir       = "node-proxy"
	LogsDir            = "logs" // NAME.log of every process started
)

// Host describes the machine a run measured on.
type Host struct {
	Hostname    string `json:"hostname"`
	Kernel      string `json:"kernel"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpu_model"`
	MemoryBytes int64  `json:"memory_bytes"`
	LoadAvg1m   string `json:"loadavg_1m"`
}

// Phase is one step of a run with its wall-clock span.
type Phase struct {
	Name    string    `json:"name"` // prepare, idle, warmup, measure, drain, collect, teardown
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// The platforms a run names in RunManifest.Platform.
const (
	// PlatformLocal is the local lab; manifests written before the field
	// existed carry "" and were local runs too (see RunManifest.Local).
	PlatformLocal = "local"
	// PlatformKube is a Kubernetes cluster.
	PlatformKube = "kube"
)

// RunManifest describes one run (one benchmark cell).
type RunManifest struct {
	Schema           string         `json:"schema"`
	MeshbenchVersion string         `json:"meshbench_version"`
	EnvoyVersion     string         `json:"envoy_version,omitempty"`
	Platform         string         `json:"platform"` // PlatformLocal or PlatformKube
	StartedAt        time.Time      `json:"started_at"`
	EndedAt          time.Time      `json:"ended_at"`
	Host             Host           `json:"host"`
	Options          map[string]any `json:"options"`
	Phases           []Phase        `json:"phases"`
	// Valid is false when the run must not be used as a measurement; Invalid
	// says why (rate not reached, errors, a proxy died, sampler gaps…).
	Valid   bool     `json:"valid"`
	Invalid []string `json:"invalid,omitempty"`
	// Processes lists every process the run started: name, role, PID.
	Processes []ProcessInfo `json:"processes"`
	// Derived holds figures computed at the end of the run for display
	// (they are recomputed from the raw files by reports).
	Derived map[string]float64 `json:"derived,omitempty"`
	// Drain says how the sampling after the load ended, on platforms
	// whose drain ends when the app is idle again (kube); nil where the
	// drain is a fixed time (local).
	Drain *Drain `json:"drain,omitempty"`
}

// How a drain ended (Drain.Ended).
const (
	DrainIdle        = "idle"        // the app was idle again by samples taken wholly after the load's end
	DrainMaximum     = "maximum"     // its maximum was reached first
	DrainInterrupted = "interrupted" // the run was interrupted
	DrainOff         = "off"         // no drain was asked for
)

// Drain is how a run's drain ended. The drain keeps sampling after the
// load's end until, for every app pod, a fresh sample whose whole window
// lies after the load's end is in, and the app's CPU by the newest of
// them is under the idle threshold (the one the run waited for before the
// load), or until its maximum.
type Drain struct {
	// Ended is DrainIdle, DrainMaximum, DrainInterrupted or DrainOff.
	Ended string `json:"ended"`
	// Seconds is how long the drain lasted, MaxSeconds its bound.
	Seconds    float64 `json:"seconds"`
	MaxSeconds float64 `json:"max_seconds"`
	// LoadEnded is the load's end (the merged load result's last answer,
	// or the drain's start when there is no load result).
	LoadEnded time.Time `json:"load_ended"`
	// AppPods is how many app pods the run sampled; AppPodsSampled how
	// many of them had a sample wholly after the load's end when the drain
	// ended.
	AppPods        int `json:"app_pods"`
	AppPodsSampled int `json:"app_pods_sampled"`
	// AppCPUMillicores is the app's CPU by the newest of those samples,
	// IdleMillicores the threshold it is held to; SampleTime the newest
	// sample's time (zero: none).
	AppCPUMillicores float64   `json:"app_cpu_millicores"`
	IdleMillicores   float64   `json:"idle_millicores"`
	SampleTime       time.Time `json:"sample_time,omitzero"`
}

// String says in a few words how the drain ended.
func (d Drain) String() string {
	lasted := time.Duration(d.Seconds * float64(time.Second)).Round(time.Second)
	switch d.Ended {
	case DrainIdle:
		return fmt.Sprintf("app idle again after %s (%.0fm < %.0fm by samples taken wholly after the load's end)", lasted, d.AppCPUMillicores, d.IdleMillicores)
	case DrainMaximum:
		why := fmt.Sprintf("app CPU %.0fm, not under %.0fm", d.AppCPUMillicores, d.IdleMillicores)
		if d.AppPodsSampled < d.AppPods || d.AppPods == 0 {
			why = fmt.Sprintf("%d of %d app pods had a sample taken wholly after the load's end", d.AppPodsSampled, d.AppPods)
		}
		return fmt.Sprintf("maximum of %s reached before the app was seen idle again (%s)",
			time.Duration(d.MaxSeconds*float64(time.Second)).Round(time.Second), why)
	case DrainInterrupted:
		return fmt.Sprintf("interrupted after %s", lasted)
	case DrainOff:
		return "none"
	}
	return d.Ended
}

// ProcessInfo is one process a run started.
type ProcessInfo struct {
	Name      string `json:"name"`
	Component string `json:"component"`
	Category  string `json:"category"`
	PID       int    `json:"pid"`
	Command   string `json:"command"`
}

// ReadHost reads the host description from the OS (Linux /proc; other
// systems fill what Go knows).
func ReadHost() Host {
	h := Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				fmt.Sscanf(strings.TrimPrefix(line, "MemTotal:"), "%d", &kb)
			}
		}
		h.MemoryBytes = kb << 10
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			h.LoadAvg1m = f[0]
		}
	}
	return h
}

// RunDir is a results directory being written. Files are written whole
// (temp file + rename), so a crash never leaves a half-written file.
type RunDir struct{ Path string }

// CheckNewDir tells, without creating anything, whether path can become a
// new results directory: it must not be a file nor a non-empty directory,
// and its nearest existing ancestor must be a directory. Commands call it
// before any work, so a bad --out is reported first (a usage error).
func CheckNewDir(path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s is a file: allowed: a new or empty directory", path)
	case err == nil:
		if entries, err := os.ReadDir(path); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		} else if len(entries) > 0 {
			return fmt.Errorf("results directory %s is not empty: choose a new --out, finished results are never overwritten", path)
		}
		return nil
	case !missing(err):
		return fmt.Errorf("%s: %v", path, err)
	}
	for dir := filepath.Dir(filepath.Clean(path)); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s: %s is a file, not a directory", path, dir)
			}
			return nil
		}
		if !missing(err) {
			return fmt.Errorf("%s: %v", path, err)
		}
		if next := filepath.Dir(dir); next == dir {
			return nil
		}
	}
}

// missing: a path that does not exist, or runs through a file.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// CheckOutputFile tells, without creating anything, whether a report can be
// written to path: its directory must exist, and path must not be a
// directory. Commands call it before computing anything.
func CheckOutputFile(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory: allowed: a file path", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: directory %s: %v", path, dir, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	return nil
}

// WriteFileAtomic writes data to path whole: into a temporary file in the
// same directory, then renamed over path. A failure (a full disk) leaves
// the previous file, if any, untouched and no temporary file behind.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Chmod(perm), f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// CreateRunDir makes a new, empty results directory. It refuses to reuse a
// non-empty one, so finished results are never overwritten.
func CreateRunDir(path string) (*RunDir, error) {
	if entries, err := os.ReadDir(path); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("results directory %s is not empty: choose a new --out, finished results are never overwritten", path)
	}
	for _, d := range []string{path, filepath.Join(path, EnvoyDir), filepath.Join(path, LogsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating results directory: %w", err)
		}
	}
	return &RunDir{Path: path}, nil
}

// WriteFile writes name (relative to the directory) atomically.
func (d *RunDir) WriteFile(name string, data []byte) error {
	full := filepath.Join(d.Path, name)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return WriteFileAtomic(full, data, 0o644)
}

// WriteJSON writes v as indented JSON, atomically.
func (d *RunDir) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return d.WriteFile(name, append(b, '\n'))
}

// ReadManifest reads and checks a run manifest.
func ReadManifest(dir string) (*RunManifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m RunManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Schema != RunSchema {
		return nil, errors.New("manifest schema " + m.Schema + ": this meshbench reads " + RunSchema)
	}
	return &m, nil
}

// Local reports whether the run was on the local lab: platform "local",
// or "" in a manifest older than the field.
func (m *RunManifest) Local() bool { return m.Platform == "" || m.Platform == PlatformLocal }
