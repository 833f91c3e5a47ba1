//go:build !linux

package precise

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends (returning its error).
func Sleep(ctx context.Context, d time.Duration) error { return timerSleep(ctx, d) }
