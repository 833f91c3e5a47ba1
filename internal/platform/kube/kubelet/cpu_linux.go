package kubelet

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPUTime is the CPU time (user+system) the whole process has used,
// from CLOCK_PROCESS_CPUTIME_ID: a round's requests run on client-go's
// transport goroutines too, so the calling thread's time would miss them.
func processCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
