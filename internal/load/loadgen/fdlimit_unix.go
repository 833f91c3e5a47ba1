//go:build unix

package loadgen

import (
	"fmt"
	"syscall"
)

// fdReserve is the file descriptors a load process needs besides its
// connections: standard streams, the output file, the runtime's poller and
// timers, a TLS key file or two, with room to spare.
const fdReserve = 64

// EnsureFileLimit makes sure this process may hold connections open
// connections at once: it raises the soft RLIMIT_NOFILE up to the hard one
// where that is needed and allowed, and otherwise says in one line how many
// connections fit. Without it a too-low limit shows up mid-run as failed
// requests ("socket: too many open files") that look like the target's.
func EnsureFileLimit(connections int) error {
	need := uint64(max(connections, 0)) + fdReserve
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // nothing to learn here; a shortage still shows as local errors
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		fits := int64(lim.Max) - fdReserve
		return fmt.Errorf("--connections %d: needs about %d open files but this process may open at most %d (the hard limit, ulimit -Hn); use at most %d connections or raise the limit",
			connections, need, lim.Max, max(fits, 0))
	}
	soft := lim.Cur
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("--connections %d: needs about %d open files but the soft limit is %d and raising it failed: %v", connections, need, soft, err)
	}
	return nil
}
