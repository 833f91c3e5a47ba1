//go:build !linux

package sample

import (
	"errors"
	"time"
)

type procReader struct{}

func (r *procReader) readFile(path string) ([]byte, error) {
	return nil, errors.ErrUnsupported
}

func isNotExist(err error) bool { return false }

// threadCPUTime is not measured outside Linux.
func threadCPUTime() time.Duration { return 0 }
