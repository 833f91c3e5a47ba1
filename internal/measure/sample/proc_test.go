package sample

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real /proc/PID/stat line (cat, Linux 6.18), fields 14, 15 and 22 being
// 0, 0 and 216573.
const statCat = "10237 (cat) R 10230 10230 7812 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 216573 3133440 417 18446744073709551615 94102223966208 94102223986089 140721455389312 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94102224002096 94102224003712 94102841192448 140721455393465 140721455393485 140721455393485 140721455394795 0\n"

// statLine builds a stat line with the given comm, state, utime, stime and
// starttime, the other fields as in statCat.
func statLine(pid int, comm string, state byte, utime, stime, start uint64) string {
	return fmt.Sprintf("%d (%s) %c 1 1 0 0 -1 4194304 99 0 0 0 %d %d 0 0 20 0 1 0 %d 3133440 417 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		pid, comm, state, utime, stime, start)
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		in      string
		want    Stat
		wantErr string // substring of the error; "" when valid
	}{
		// A real line.
		{in: statCat, want: Stat{PID: 10237, Comm: "cat", State: 'R', Flags: 4194304, StartTicks: 216573}},
		// CPU times and a sleeping state.
		{in: statLine(42, "envoy", 'S', 1234, 567, 99), want: Stat{Flags: 4194304, PID: 42, Comm: "envoy", State: 'S', UTimeTicks: 1234, STimeTicks: 567, StartTicks: 99}},
		// A comm with spaces and parentheses: the last ')' ends it.
		{in: statLine(7, "a) (b c) R 1", 'S', 5, 6, 7), want: Stat{Flags: 4194304, PID: 7, Comm: "a) (b c) R 1", State: 'S', UTimeTicks: 5, STimeTicks: 6, StartTicks: 7}},
		// An empty comm.
		{in: statLine(8, "", 'Z', 1, 2, 3), want: Stat{Flags: 4194304, PID: 8, Comm: "", State: 'Z', UTimeTicks: 1, STimeTicks: 2, StartTicks: 3}},
		// Without the final newline.
		{in: strings.TrimSuffix(statLine(9, "x", 'R', 1, 2, 3), "\n"), want: Stat{Flags: 4194304, PID: 9, Comm: "x", State: 'R', UTimeTicks: 1, STimeTicks: 2, StartTicks: 3}},
		// Largest values: utime + stime just fits.
		{in: statLine(10, "x", 'R', 1<<63, 1<<63-1, 3), want: Stat{Flags: 4194304, PID: 10, Comm: "x", State: 'R', UTimeTicks: 1 << 63, STimeTicks: 1<<63 - 1, StartTicks: 3}},
		// Flags (field 9) with PF_EXITING.
		{in: strings.Replace(statLine(11, "x", 'R', 1, 2, 3), " 4194304 ", " 4194308 ", 1), want: Stat{PID: 11, Comm: "x", State: 'R', Flags: 4194308, UTimeTicks: 1, STimeTicks: 2, StartTicks: 3}},
		// utime + stime overflows.
		{in: statLine(10, "x", 'R', 1<<63, 1<<63, 3), wantErr: "overflows"},
		// Not a stat line.
		{in: "", wantErr: `no "PID (comm)"`},
		{in: "(cat) R 1", wantErr: `no "PID (comm)"`},
		{in: "12 cat R", wantErr: `no "PID (comm)"`},
		{in: "x (cat) R", wantErr: "not a positive number"},
		{in: "0 (cat) R", wantErr: "not a positive number"},
		{in: "-3 (cat) R", wantErr: "not a positive number"},
		// Truncated after field 21.
		{in: "1 (c) S 1 1 0 0 -1 4194304 99 0 0 0 5 6 0 0 20 0 1 0", wantErr: "field 22 missing"},
		// Two spaces: an empty field is not a number.
		{in: strings.Replace(statLine(1, "c", 'S', 5, 6, 7), " 5 6 ", " 5  6 ", 1), wantErr: "field 15"},
		// A state of two characters.
		{in: "1 (c) SS 1", wantErr: "not one character"},
		// A negative utime.
		{in: strings.Replace(statLine(1, "c", 'S', 5, 6, 7), " 5 6 ", " -5 6 ", 1), wantErr: "field 14"},
		// A value above 2^64-1.
		{in: "1 (c) S 1 1 0 0 -1 4194304 99 0 0 0 18446744073709551616 6 0 0 20 0 1 0 7", wantErr: "field 14"},
	}
	for _, tt := range tests {
		got, err := ParseStat([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseStat(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseStat(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseStat(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestStatExited(t *testing.T) {
	tests := []struct {
		s    Stat
		want bool
	}{
		{Stat{State: 'R', Flags: 0x400000}, false}, // running
		{Stat{State: 'S'}, false},                  // sleeping
		{Stat{State: 'Z'}, true},                   // zombie
		{Stat{State: 'X'}, true},                   // dead
		{Stat{State: 'R', Flags: 0x400004}, true},  // PF_EXITING: memory may be gone already
	}
	for _, tt := range tests {
		if got := tt.s.Exited(); got != tt.want {
			t.Errorf("%+v.Exited() = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statCat), "cat", uint64(0), uint64(0), uint64(216573))
	f.Add([]byte("1 (a) b) S 1"), "a) (b", uint64(1), uint64(2), uint64(3))
	f.Add([]byte("99 () Z"), "", uint64(1<<63), uint64(1<<62), uint64(0))
	f.Fuzz(func(t *testing.T, raw []byte, comm string, utime, stime, start uint64) {
		// Any input: no panic, and what is accepted is consistent.
		if s, err := ParseStat(raw); err == nil {
			if s.PID <= 0 || s.UTimeTicks > ^uint64(0)-s.STimeTicks {
				t.Fatalf("ParseStat(%q) = %+v", raw, s)
			}
		}
		// A line the kernel could write, whatever the comm holds (the
		// kernel keeps at most 15 bytes of it, and no NUL): parsed back
		// exactly.
		if utime > ^uint64(0)-stime {
			return
		}
		line := statLine(123, comm, 'S', utime, stime, start)
		s, err := ParseStat([]byte(line))
		if err != nil {
			t.Fatalf("ParseStat(%q): %v", line, err)
		}
		want := Stat{Flags: 4194304, PID: 123, Comm: comm, State: 'S', UTimeTicks: utime, STimeTicks: stime, StartTicks: start}
		if s != want {
			t.Fatalf("ParseStat(%q) = %+v, want %+v", line, s, want)
		}
	})
}

const statusSleep = `Name:	sleep
Umask:	0022
State:	S (sleeping)
Tgid:	4242
Pid:	4242
VmPeak:	    2480 kB
VmSize:	    2480 kB
VmHWM:	    1024 kB
VmRSS:	    1020 kB
RssAnon:	      88 kB
RssFile:	     932 kB
RssShmem:	       0 kB
Threads:	1
`

func TestParseStatus(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64 // RSS bytes
		wantErr string
	}{
		// A real status file.
		{in: statusSleep, want: 1020 << 10},
		// Spaces instead of a tab, no final newline.
		{in: "VmRSS: 5 kB", want: 5 << 10},
		// Zero (an exiting process).
		{in: "VmRSS:\t0 kB\n", want: 0},
		// VmRSSx is another key.
		{in: "VmRSSx:\t5 kB\nVmRSS:\t6 kB\n", want: 6 << 10},
		// A zombie or kernel thread: no VmRSS line.
		{in: "Name:\tkthreadd\nState:\tS (sleeping)\n", wantErr: "no VmRSS line"},
		{in: "", wantErr: "no VmRSS line"},
		// Malformed values.
		{in: "VmRSS:\t5 MB\n", wantErr: `want "N kB"`},
		{in: "VmRSS:\t5\n", wantErr: `want "N kB"`},
		{in: "VmRSS:\t-5 kB\n", wantErr: "not a number"},
		{in: "VmRSS:\t kB\n", wantErr: `want "N kB"`},
		// Too large to count in bytes.
		{in: "VmRSS:\t18014398509481984 kB\n", wantErr: "not a number"},
	}
	for _, tt := range tests {
		got, err := ParseStatus([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseStatus(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.RSSBytes != tt.want {
			t.Errorf("ParseStatus(%q) = %d, %v; want %d", tt.in, got.RSSBytes, err, tt.want)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(statusSleep))
	f.Add([]byte("VmRSS:\t18014398509481983 kB"))
	f.Add([]byte("VmRSS:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b)
		if err != nil {
			return
		}
		// Whole kB, never wrapped around.
		if s.RSSBytes%1024 != 0 || s.RSSBytes>>10 >= 1<<54 {
			t.Fatalf("ParseStatus(%q) = %d", b, s.RSSBytes)
		}
		if !strings.Contains(string(b), "VmRSS:") {
			t.Fatalf("ParseStatus(%q) succeeded without a VmRSS line", b)
		}
	})
}

const smapsRollupCat = `5604af24d000-7ffd0c105000 ---p 00000000 00:00 0                          [rollup]
Rss:                1572 kB
Pss:                 448 kB
Pss_Dirty:           116 kB
Pss_Anon:            116 kB
Pss_File:            332 kB
Pss_Shmem:             0 kB
Shared_Clean:       1376 kB
Private_Dirty:       116 kB
Swap:                  0 kB
SwapPss:               0 kB
Locked:                0 kB
`

func TestParseSmapsRollup(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64 // PSS bytes
		wantErr string
	}{
		// A real file (cat, Linux 6.18).
		{in: smapsRollupCat, want: 448 << 10},
		// Pss_Anon and SwapPss are other keys, even when they come first.
		{in: "Pss_Anon:  1 kB\nSwapPss:  2 kB\nPss:  3 kB\n", want: 3 << 10},
		// A process whose memory is gone: the file is empty.
		{in: "", wantErr: "no Pss line"},
		{in: "Pss_Anon:  1 kB\n", wantErr: "no Pss line"},
		// Malformed.
		{in: "Pss: 12 kb\n", wantErr: `want "N kB"`},
		{in: "Pss: 0x10 kB\n", wantErr: "not a number"},
	}
	for _, tt := range tests {
		got, err := ParseSmapsRollup([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSmapsRollup(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.PSSBytes != tt.want {
			t.Errorf("ParseSmapsRollup(%q) = %d, %v; want %d", tt.in, got.PSSBytes, err, tt.want)
		}
	}
}

func FuzzParseSmapsRollup(f *testing.F) {
	f.Add([]byte(smapsRollupCat))
	f.Add([]byte("Pss:\t1 kB\nPss:\t2 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSmapsRollup(b)
		if err != nil {
			return
		}
		if s.PSSBytes%1024 != 0 || s.PSSBytes>>10 >= 1<<54 {
			t.Fatalf("ParseSmapsRollup(%q) = %d", b, s.PSSBytes)
		}
		// The first Pss line gives the value.
		i := strings.Index("\n"+string(b), "\nPss:")
		if i < 0 {
			t.Fatalf("ParseSmapsRollup(%q) succeeded without a Pss line", b)
		}
		rest, _, _ := strings.Cut(string(b)[i+len("Pss:"):], "\n")
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimRight(strings.TrimLeft(rest, " \t"), " \t"), " kB"), 10, 64)
		if err != nil || n<<10 != s.PSSBytes {
			t.Fatalf("ParseSmapsRollup(%q) = %d, the line says %q", b, s.PSSBytes, rest)
		}
	})
}

// TestClockTicksMatchGetconf checks the assumed USER_HZ against the
// system's.
func TestClockTicksMatchGetconf(t *testing.T) {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		t.Skipf("getconf CLK_TCK: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != strconv.Itoa(ClockTicksPerSecond) {
		t.Fatalf("getconf CLK_TCK = %s, ClockTicksPerSecond = %d", got, ClockTicksPerSecond)
	}
}

func TestReadProcSelf(t *testing.T) {
	ps, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ps.RSSBytes == 0 || ps.PSSBytes == 0 || !ps.HasPSS || ps.StartTicks == 0 {
		t.Errorf("ReadProc(self) = %+v, want RSS, PSS and start time", ps)
	}
	// Without smaps_rollup: no PSS, and it says so.
	var r procReader
	if ps, err := r.read(os.Getpid(), false); err != nil || ps.RSSBytes == 0 || ps.StartTicks == 0 || ps.HasPSS || ps.PSSBytes != 0 {
		t.Errorf("read(self, no PSS) = %+v, %v; want RSS and start time, no PSS", ps, err)
	}
	if _, err := ReadProc(0); err == nil || errors.Is(err, ErrGone) {
		t.Errorf("ReadProc(0) = %v, want an error other than ErrGone", err)
	}
}

// TestReadProcWhileExiting reads processes as they are killed: every
// reading is a sample or ErrGone, never another error (an exiting process
// loses its memory before its state turns Z).
func TestReadProcWhileExiting(t *testing.T) {
	for i := 0; i < 30; i++ {
		cmd := startProcess(t, "sleep", "30")
		pid := cmd.Process.Pid
		var r procReader
		done := make(chan error, 1)
		go func() {
			for n := 0; ; n++ {
				// With and without smaps_rollup: either way, the exit
				// reads as ErrGone.
				if _, err := r.read(pid, n%2 == 0); err != nil {
					done <- err
					return
				}
			}
		}()
		time.Sleep(time.Duration(i%5) * time.Millisecond)
		if i%2 == 0 {
			stopProcess(cmd) // killed and reaped
		} else if err := cmd.Process.Kill(); err != nil { // left a zombie until cleanup
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, ErrGone) {
			t.Fatalf("reading process %d while it exits: %v, want ErrGone", pid, err)
		}
	}
}

func TestReadProcExited(t *testing.T) {
	// A zombie: killed, not yet reaped.
	cmd := startProcess(t, "sleep", "30")
	if _, err := ReadProc(cmd.Process.Pid); err != nil {
		t.Fatalf("ReadProc(sleep): %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := ReadProc(cmd.Process.Pid); return errors.Is(err, ErrGone) }, "the killed process to read as gone")
	// Reaped: no /proc entry any more.
	_ = cmd.Wait()
	if _, err := ReadProc(cmd.Process.Pid); !errors.Is(err, ErrGone) {
		t.Errorf("ReadProc(reaped) = %v, want ErrGone", err)
	}
}
