//go:build !linux

package kubemetrics

import "time"

// processCPUTime is not measured outside Linux.
func processCPUTime() time.Duration { return 0 }
