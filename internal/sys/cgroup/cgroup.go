// Package cgroup caps a running process's CPU through the kernel's cgroups,
// as a container runtime does for a container's CPU limit: the process is
// moved into a cgroup of its own whose CFS quota is the limit, and moved
// back when the limit is lifted. Both hierarchies are supported: cgroup v1
// (cpu.cfs_quota_us and cpu.cfs_period_us in the cpu controller's
// hierarchy, as on this project's machines) and cgroup v2 (cpu.max).
//
// The three files it writes are written directly: the libraries made for
// cgroups (containerd/cgroups, runc's libcontainer) manage whole container
// lifecycles and bring eBPF and D-Bus dependencies for what is here a
// mkdir, two writes and an rmdir.
//
// Every cgroup made here is named Prefix + the caller's name + the PID of
// the meshbench that made it, directly under the hierarchy's root, and is
// removed by Lift; RemoveStale removes those a meshbench killed with
// SIGKILL left behind (empty, their maker gone).
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prefix starts the name of every cgroup this package makes.
const Prefix = "meshbench-fault-"

// Period is the CFS period of every limit (the kernel's and Kubernetes'
// default, 100 ms): the process runs at most quota µs of every period.
const Period = 100 * time.Millisecond

// MinMillicores is the smallest limit: the kernel refuses a quota under
// 1 ms per period.
const MinMillicores = 10

// Hierarchy is where the cpu controller is mounted.
type Hierarchy struct {
	// Root is the mount point (/sys/fs/cgroup/cpu on v1 here,
	// /sys/fs/cgroup on a v2 host).
	Root string
	// V2 is true for the unified hierarchy (cpu.max), false for v1
	// (cpu.cfs_quota_us).
	V2 bool
}

// Find returns the hierarchy that holds the cpu controller: a v1 mount
// with the cpu option, else a v2 mount that offers cpu. It reads
// /proc/self/mountinfo.
func Find() (Hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return Hierarchy{}, err
	}
	defer f.Close()
	var v2 []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		mnt := unescape(fields[4])
		switch tail[0] {
		case "cgroup":
			for _, o := range strings.Split(tail[2], ",") {
				if o == "cpu" {
					return Hierarchy{Root: mnt}, nil
				}
			}
		case "cgroup2":
			v2 = append(v2, mnt)
		}
	}
	if err := sc.Err(); err != nil {
		return Hierarchy{}, err
	}
	for _, mnt := range v2 {
		b, err := os.ReadFile(filepath.Join(mnt, "cgroup.controllers"))
		if err == nil && hasWord(string(b), "cpu") {
			return Hierarchy{Root: mnt, V2: true}, nil
		}
	}
	return Hierarchy{}, errors.New("no cgroup hierarchy with the cpu controller is mounted")
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// Limit is a process held under a CPU limit; Lift ends it.
type Limit struct {
	// PID is the limited process.
	PID int
	// Millicores is the limit: the process's threads together run at most
	// Millicores/1000 × Period of every Period.
	Millicores int
	// Dir is the cgroup the process was moved into.
	Dir string
	// From is the cgroup it came from (relative to the hierarchy's root),
	// where Lift puts it back.
	From string
	h    Hierarchy
}

// LimitCPU caps pid at millicores (MinMillicores or more): it makes a
// cgroup Prefix+name+"-"+meshbench's PID under h's root, sets its quota
// and moves the process (every thread of it) there. On error nothing is
// left behind.
func (h Hierarchy) LimitCPU(pid int, name string, millicores int) (*Limit, error) {
	if millicores < MinMillicores {
		return nil, fmt.Errorf("cpu limit %dm: allowed %dm or more", millicores, MinMillicores)
	}
	if strings.ContainsAny(name, "/ \n") || name == "" {
		return nil, fmt.Errorf("cgroup name %q: allowed a non-empty name without / or spaces", name)
	}
	from, err := h.cgroupOf(pid)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(h.Root, Prefix+name+"-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("making cgroup %s: %w", dir, err)
	}
	l := &Limit{PID: pid, Millicores: millicores, Dir: dir, From: from, h: h}
	if err := h.setQuota(dir, millicores); err != nil {
		return nil, errors.Join(err, os.Remove(dir))
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return nil, errors.Join(fmt.Errorf("moving pid %d into %s: %w", pid, dir, err), os.Remove(dir))
	}
	return l, nil
}

// setQuota writes the limit into cgroup dir.
func (h Hierarchy) setQuota(dir string, millicores int) error {
	period := Period.Microseconds()
	quota := int64(millicores) * period / 1000
	if h.V2 {
		if err := enableCPU(h.Root); err != nil {
			return err
		}
		return write(dir, "cpu.max", fmt.Sprintf("%d %d", quota, period))
	}
	if err := write(dir, "cpu.cfs_period_us", strconv.FormatInt(period, 10)); err != nil {
		return err
	}
	return write(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
}

// enableCPU turns the cpu controller on for root's children (v2): the
// root is exempt from the rule that a cgroup with controllers for its
// children holds no process itself.
func enableCPU(root string) error {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	if err == nil && hasWord(string(b), "cpu") {
		return nil
	}
	return write(root, "cgroup.subtree_control", "+cpu")
}

func write(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, filepath.Join(dir, file), err)
	}
	return nil
}

// cgroupOf is pid's cgroup in h, relative to its root, from
// /proc/PID/cgroup.
func (h Hierarchy) cgroupOf(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", fmt.Errorf("reading the cgroup of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// ID:CONTROLLERS:PATH
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if h.V2 && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		if !h.V2 {
			for _, c := range strings.Split(parts[1], ",") {
				if c == "cpu" {
					return parts[2], nil
				}
			}
		}
	}
	return "", fmt.Errorf("pid %d is in no cgroup of the cpu hierarchy %s", pid, h.Root)
}

// Lift moves the process back to the cgroup it came from and removes the
// limit's cgroup. A process that has exited meanwhile has nothing to move
// back; the cgroup is removed all the same (the kernel lets an emptied
// cgroup go once its last task is reaped, so the removal is retried for a
// moment). Safe to call twice.
func (l *Limit) Lift() error {
	if l == nil || l.Dir == "" {
		return nil
	}
	var errs []error
	back := filepath.Join(l.h.Root, l.From, "cgroup.procs")
	if err := os.WriteFile(back, []byte(strconv.Itoa(l.PID)), 0o644); err != nil && !errors.Is(err, syscall.ESRCH) {
		errs = append(errs, fmt.Errorf("moving pid %d back to %s: %w", l.PID, l.From, err))
	}
	if err := removeDir(l.Dir); err != nil {
		errs = append(errs, err)
	} else {
		l.Dir = ""
	}
	return errors.Join(errs...)
}

// removeDir removes an emptied cgroup, retrying while the kernel still
// counts a task that has just left or died (EBUSY).
func removeDir(dir string) error {
	var err error
	for range 50 {
		err = os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", dir, err)
}

// Procs lists the PIDs in cgroup dir.
func Procs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// Stale lists the limit cgroups under h's root whose maker (the PID at the
// end of the name) is no longer running: left by a meshbench that was
// killed before it could lift them.
func (h Hierarchy) Stale() []string {
	ents, err := os.ReadDir(h.Root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), Prefix) {
			continue
		}
		i := strings.LastIndexByte(e.Name(), '-')
		pid, err := strconv.Atoi(e.Name()[i+1:])
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		out = append(out, filepath.Join(h.Root, e.Name()))
	}
	return out
}

// RemoveStale moves any process out of the stale limit cgroups (Stale)
// into the hierarchy's root and removes them.
func (h Hierarchy) RemoveStale() error {
	var errs []error
	for _, dir := range h.Stale() {
		procs, _ := Procs(dir)
		for _, p := range procs {
			_ = os.WriteFile(filepath.Join(h.Root, "cgroup.procs"), []byte(strconv.Itoa(p)), 0o644)
		}
		if err := removeDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
