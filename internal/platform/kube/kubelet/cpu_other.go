//go:build !linux

package kubelet

import "time"

// processCPUTime is not measured outside Linux.
func processCPUTime() time.Duration { return 0 }
