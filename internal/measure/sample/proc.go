package sample

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ClockTicksPerSecond is the unit of the CPU times in /proc/PID/stat
// (sysconf(_SC_CLK_TCK), USER_HZ). It is 100 on every Linux architecture Go
// runs on (the kernel fixes USER_HZ at 100 for x86, arm64, riscv, ppc, s390;
// only alpha and ia64 differ), so it is a constant rather than a cgo call;
// TestClockTicksMatchGetconf checks it against `getconf CLK_TCK`. One tick is
// 10 ms of CPU: a sampling interval of I seconds measures CPU in steps of
// 10/I millicores (10m at 1 s, 50m at 200 ms).
const ClockTicksPerSecond = 100

// ErrGone is returned (wrapped) by ReadProc when the process does not exist
// any more, has exited and waits to be reaped (a zombie), or is exiting.
var ErrGone = errors.New("process has exited")

// ProcSample is one reading of a process from /proc.
type ProcSample struct {
	// CPUTicks is utime+stime from /proc/PID/stat (fields 14 and 15): CPU
	// time used since the process started, user and system, in clock ticks
	// (1/ClockTicksPerSecond s). Threads are included; reaped children are
	// not.
	CPUTicks uint64
	// StartTicks is field 22 of /proc/PID/stat, the start time after boot
	// in clock ticks. Together with the PID it identifies the process: a
	// reused PID has another start time.
	StartTicks uint64
	// RSSBytes is VmRSS from /proc/PID/status: resident memory in bytes,
	// shared pages counted in full.
	RSSBytes uint64
	// PSSBytes is Pss from /proc/PID/smaps_rollup: proportional set size in
	// bytes, each shared page divided among the processes mapping it. It is
	// 0 when HasPSS is false.
	PSSBytes uint64
	// HasPSS is true when smaps_rollup was read. It costs far more than
	// stat and status (~1.3 ms of CPU for an Envoy, ~0.5 ms for a Go
	// process, against ~35 µs for the other two), so the Sampler reads it
	// only every Sampler.PSSEvery rounds.
	HasPSS bool
}

// Stat holds the fields meshbench reads from /proc/PID/stat (proc(5)).
type Stat struct {
	PID        int    // field 1
	Comm       string // field 2 without its parentheses; may hold spaces and ')'
	State      byte   // field 3: R, S, D, Z (zombie), X (dead), T, t, I, …
	Flags      uint64 // field 9: the kernel's PF_* flags of the task
	UTimeTicks uint64 // field 14: user CPU time, clock ticks
	STimeTicks uint64 // field 15: system CPU time, clock ticks
	StartTicks uint64 // field 22: start time after boot, clock ticks
}

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h),
// set at the start of exit, before the process's memory is released.
const pfExiting = 0x00000004

// Exited reports whether the process has exited (state zombie or dead) or
// is exiting (PF_EXITING: its memory may already be gone while its state
// still reads R or S).
func (s Stat) Exited() bool {
	return s.State == 'Z' || s.State == 'X' || s.State == 'x' || s.Flags&pfExiting != 0
}

// ParseStat parses the content of /proc/PID/stat. The command name is
// enclosed in the first '(' and the last ')' of the line, since it may
// itself contain spaces and parentheses; the fields after it are separated
// by single spaces.
func ParseStat(b []byte) (Stat, error) {
	b = bytes.TrimSuffix(b, []byte("\n"))
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 2 || closing < open || b[open-1] != ' ' {
		return Stat{}, errors.New("parsing /proc/PID/stat: no \"PID (comm)\" at the start")
	}
	pid, ok := parseUint(b[:open-1])
	if !ok || pid == 0 || pid > math.MaxInt32 {
		return Stat{}, fmt.Errorf("parsing /proc/PID/stat: PID %q is not a positive number", b[:open-1])
	}
	s := Stat{PID: int(pid), Comm: string(b[open+1 : closing])}
	rest := b[closing+1:]
	// Fields 3… follow, each preceded by one space; field n is rest's
	// (n-3)th.
	const last = 22
	for n := 3; n <= last; n++ {
		if len(rest) == 0 || rest[0] != ' ' {
			return Stat{}, fmt.Errorf("parsing /proc/PID/stat: field %d missing", n)
		}
		rest = rest[1:]
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		field := rest[:end]
		rest = rest[end:]
		switch n {
		case 3:
			if len(field) != 1 {
				return Stat{}, fmt.Errorf("parsing /proc/PID/stat: state %q is not one character", field)
			}
			s.State = field[0]
		case 9, 14, 15, 22:
			v, ok := parseUint(field)
			if !ok {
				return Stat{}, fmt.Errorf("parsing /proc/PID/stat: field %d %q is not a number", n, field)
			}
			switch n {
			case 9:
				s.Flags = v
			case 14:
				s.UTimeTicks = v
			case 15:
				s.STimeTicks = v
			case 22:
				s.StartTicks = v
			}
		}
	}
	if s.UTimeTicks > math.MaxUint64-s.STimeTicks {
		return Stat{}, errors.New("parsing /proc/PID/stat: utime+stime overflows")
	}
	return s, nil
}

// Status holds what meshbench reads from /proc/PID/status.
type Status struct {
	RSSBytes uint64 // VmRSS, in bytes
}

// ParseStatus parses the content of /proc/PID/status. Its VmRSS line
// ("VmRSS:\t    1234 kB") is required: zombies and kernel threads have
// none.
func ParseStatus(b []byte) (Status, error) {
	kb, err := kBField(b, "VmRSS")
	if err != nil {
		return Status{}, fmt.Errorf("parsing /proc/PID/status: %w", err)
	}
	return Status{RSSBytes: kb << 10}, nil
}

// SmapsRollup holds what meshbench reads from /proc/PID/smaps_rollup.
type SmapsRollup struct {
	PSSBytes uint64 // Pss, in bytes
}

// ParseSmapsRollup parses the content of /proc/PID/smaps_rollup (Linux 4.14
// or later): a header line, then "Key:   value kB" lines; the Pss line is
// required (it is absent when the process's memory is already gone).
func ParseSmapsRollup(b []byte) (SmapsRollup, error) {
	kb, err := kBField(b, "Pss")
	if err != nil {
		return SmapsRollup{}, fmt.Errorf("parsing /proc/PID/smaps_rollup: %w", err)
	}
	return SmapsRollup{PSSBytes: kb << 10}, nil
}

// kBField finds the first line "KEY: <spaces/tabs> N kB" and returns N, or
// an error if there is none or its value is malformed. N < 2^54, so N×1024
// does not overflow.
func kBField(b []byte, key string) (uint64, error) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) <= len(key) || line[len(key)] != ':' || string(line[:len(key)]) != key {
			continue
		}
		v := bytes.TrimLeft(line[len(key)+1:], " \t")
		digits, unit, ok := bytes.Cut(v, []byte(" "))
		if !ok || string(bytes.TrimRight(unit, " \t")) != "kB" {
			return 0, fmt.Errorf("%s %q: want \"N kB\"", key, bytes.TrimSpace(line[len(key)+1:]))
		}
		n, ok := parseUint(digits)
		if !ok || n >= 1<<54 {
			return 0, fmt.Errorf("%s %q: not a number of kB", key, digits)
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %s line", key)
}

// parseUint parses a non-empty decimal number of at most 20 digits without
// sign, allocation or overflow.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// ReadProc reads one process's CPU ticks, RSS and PSS from /proc/PID/stat,
// /proc/PID/status and /proc/PID/smaps_rollup. It returns an error wrapping
// ErrGone when the process does not exist or has exited (zombie), and
// errors.ErrUnsupported on systems without Linux's /proc. Reading
// smaps_rollup needs the right to ptrace the process (same user, or root).
func ReadProc(pid int) (ProcSample, error) {
	var r procReader
	return r.read(pid, true)
}

// read reads stat and status, and smaps_rollup when pss is true.
func (r *procReader) read(pid int, pss bool) (ProcSample, error) {
	if pid <= 0 {
		return ProcSample{}, fmt.Errorf("reading process %d: not a PID", pid)
	}
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := r.readFile(dir + "/stat")
	if err != nil {
		return ProcSample{}, r.fail(pid, err)
	}
	st, err := ParseStat(b)
	if err != nil {
		return ProcSample{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	if st.Exited() {
		return ProcSample{}, fmt.Errorf("reading process %d: %w", pid, ErrGone)
	}
	ps := ProcSample{CPUTicks: st.UTimeTicks + st.STimeTicks, StartTicks: st.StartTicks}

	b, err = r.readFile(dir + "/status")
	if err != nil {
		return ProcSample{}, r.fail(pid, err)
	}
	status, err := ParseStatus(b)
	if err != nil {
		return ProcSample{}, r.fail(pid, err)
	}
	ps.RSSBytes = status.RSSBytes
	if !pss {
		return ps, nil
	}

	b, err = r.readFile(dir + "/smaps_rollup")
	if err != nil {
		return ProcSample{}, r.fail(pid, err)
	}
	rollup, err := ParseSmapsRollup(b)
	if err != nil {
		return ProcSample{}, r.fail(pid, err)
	}
	ps.PSSBytes, ps.HasPSS = rollup.PSSBytes, true
	return ps, nil
}

// fail explains a failure after the process was seen: if it has exited in
// the meantime, the failure is ErrGone; otherwise it is err.
func (r *procReader) fail(pid int, err error) error {
	if !errors.Is(err, ErrGone) && !isNotExist(err) {
		if b, serr := r.readFile("/proc/" + strconv.Itoa(pid) + "/stat"); serr != nil {
			err = serr
		} else if st, perr := ParseStat(b); perr == nil && st.Exited() {
			err = ErrGone
		}
	}
	if isNotExist(err) {
		err = fmt.Errorf("%w (%w)", ErrGone, err)
	}
	return fmt.Errorf("reading process %d: %w", pid, err)
}
