package netlab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/sys/netns"
)

// OwnersDir holds one record per lab on this host (PREFIX.json), written
// before the lab's first namespace and removed after its last: the PID
// and start time of the process that owns it. A lab whose owner died
// without removing it (SIGKILL, a crash, a power cut of the process) is
// found through its record and removed by the next lab that starts
// (RemoveStale); a live lab's is never touched. /run is a tmpfs, emptied
// at boot with /run/netns.
var OwnersDir = "/run/meshbench/netlab"

// Owner is a lab's owner record.
type Owner struct {
	Prefix string `json:"prefix"`
	PID    int    `json:"pid"`
	// StartTicks is the owner's start time (/proc/PID/stat field 22, in
	// clock ticks since boot): a PID reused by another process does not
	// pass for the owner.
	StartTicks uint64    `json:"start_ticks"`
	Dir        string    `json:"dir"` // the lab's files
	Created    time.Time `json:"created"`
}

// Alive reports whether the owner process still runs.
func (o Owner) Alive() bool {
	t, err := startTicks(o.PID)
	return err == nil && t == o.StartTicks
}

// startTicks reads a process's start time from /proc/PID/stat.
func startTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 overall
}

// lockOwners serializes claims and removals across processes.
func lockOwners() (func(), error) {
	if err := os.MkdirAll(OwnersDir, 0o755); err != nil {
		return nil, fmt.Errorf("lab owner records: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(OwnersDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab owner records: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lab owner records: %w", err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func ownerPath(prefix string) string { return filepath.Join(OwnersDir, prefix+".json") }

func readOwner(path string) (*Owner, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var o Owner
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("lab owner record %s: %w", path, err)
	}
	return &o, nil
}

// claim records this process as the owner of prefix, removing first what
// a dead owner of the same prefix left; a live owner's prefix is refused
// with an error that is os.ErrExist. The returned func removes the record.
func claim(prefix, dir string) (func() error, error) {
	unlock, err := lockOwners()
	if err != nil {
		return nil, err
	}
	defer unlock()
	path := ownerPath(prefix)
	if old, err := readOwner(path); err == nil {
		if old.Alive() {
			return nil, fmt.Errorf("lab prefix %s belongs to the live process %d: %w", prefix, old.PID, os.ErrExist)
		}
		if _, err := netns.RemoveNamed(prefix); err != nil {
			return nil, fmt.Errorf("removing the lab %s of the dead process %d: %w", prefix, old.PID, err)
		}
	}
	ticks, err := startTicks(os.Getpid())
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(Owner{Prefix: prefix, PID: os.Getpid(), StartTicks: ticks, Dir: dir, Created: time.Now().UTC()}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("lab owner record: %w", err)
	}
	return func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}, nil
}

// LabState is one lab on this host as Labs finds it.
type LabState struct {
	Prefix string
	// Owner is its record; nil for namespaces named like a lab's
	// (mbNNN…) without one: made by a meshbench before records, which
	// may still run, so they are only reported.
	Owner      *Owner
	Alive      bool
	Namespaces []string
}

// String is one line: prefix, owner and namespaces.
func (s LabState) String() string {
	switch {
	case s.Owner == nil:
		return fmt.Sprintf("%s (no owner record, %d namespaces)", s.Prefix, len(s.Namespaces))
	case s.Alive:
		return fmt.Sprintf("%s (pid %d, %d namespaces)", s.Prefix, s.Owner.PID, len(s.Namespaces))
	}
	return fmt.Sprintf("%s (dead pid %d, %d namespaces, files %s)", s.Prefix, s.Owner.PID, len(s.Namespaces), s.Owner.Dir)
}

// labName is a namespace name made by the substrate's random prefixes.
var labName = regexp.MustCompile(`^mb[0-9]{3}`)

// Labs lists the labs on this host: one per owner record, and one per
// prefix of namespaces named like the substrate's (mbNNN…) without a
// record; sorted by prefix.
func Labs() ([]LabState, error) {
	recs, err := filepath.Glob(filepath.Join(OwnersDir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []LabState
	seen := map[string]bool{}
	for _, r := range recs {
		o, err := readOwner(r)
		if err != nil {
			continue // being written or removed
		}
		ns, err := netns.Named(o.Prefix)
		if err != nil {
			return nil, err
		}
		seen[o.Prefix] = true
		out = append(out, LabState{Prefix: o.Prefix, Owner: o, Alive: o.Alive(), Namespaces: ns})
	}
	all, err := netns.Named("")
	if err != nil {
		return nil, err
	}
	orphans := map[string][]string{}
	for _, n := range all {
		if p := labName.FindString(n); p != "" && !seen[p] {
			orphans[p] = append(orphans[p], n)
		}
	}
	for p, ns := range orphans {
		out = append(out, LabState{Prefix: p, Namespaces: ns})
	}
	slices.SortFunc(out, func(a, b LabState) int { return strings.Compare(a.Prefix, b.Prefix) })
	return out, nil
}

// RemoveStale removes every lab whose owner record names a dead process:
// its namespaces, its host links and the record. Live labs and
// namespaces without a record are left alone. It returns the labs it
// removed.
func RemoveStale() ([]LabState, error) {
	labs, err := Labs()
	if err != nil {
		return nil, err
	}
	var dead []LabState
	for _, l := range labs {
		if l.Owner != nil && !l.Alive {
			dead = append(dead, l)
		}
	}
	if len(dead) == 0 {
		return nil, nil
	}
	unlock, err := lockOwners()
	if err != nil {
		return nil, err
	}
	defer unlock()
	var removed []LabState
	var errs []error
	for _, l := range dead {
		// Read again under the lock: a new owner may have claimed it.
		o, err := readOwner(ownerPath(l.Prefix))
		if err != nil || o.Alive() {
			continue
		}
		if _, err := netns.RemoveNamed(l.Prefix); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(ownerPath(l.Prefix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, l)
	}
	return removed, errors.Join(errs...)
}

// removeStale is RemoveStale for a lab about to start: what it removed,
// and a failure, are said on log; neither stops the new lab.
func removeStale(log io.Writer) {
	removed, err := RemoveStale()
	if log == nil {
		return
	}
	for _, l := range removed {
		fmt.Fprintf(log, "netns: removed the lab %s left by a dead meshbench\n", l)
	}
	if err != nil {
		fmt.Fprintf(log, "netns: removing the labs of dead meshbench processes: %v\n", err)
	}
}
