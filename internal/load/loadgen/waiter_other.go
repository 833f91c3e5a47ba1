//go:build !linux

package loadgen

func newWaiter() waiter { return newTimerWaiter() }
