//go:build !linux

package loadgen

import (
	"io"
	"net"
)

func newRawIO(c *net.TCPConn) io.ReadWriter { return c }
