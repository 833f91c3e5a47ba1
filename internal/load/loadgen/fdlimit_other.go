//go:build !unix

package loadgen

// EnsureFileLimit has nothing to check on this system.
func EnsureFileLimit(connections int) error { return nil }
