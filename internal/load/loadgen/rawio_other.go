//go:build !linux

package loadgen

import "net"

// rawIO is the connection itself where raw system calls are not used: a
// queued request is written at the next Read, and no arrival is known.
type rawIO struct {
	*net.TCPConn
	send   []byte
	failed bool
}

func newRawIO(c *net.TCPConn) *rawIO { return &rawIO{TCPConn: c} }

func (r *rawIO) queue(p []byte)    { r.send, r.failed = p, false }
func (r *rawIO) writeFailed() bool { return r.failed }
func (r *rawIO) arrival() int64    { return 0 }

func (r *rawIO) Read(p []byte) (int, error) {
	if len(r.send) > 0 {
		_, err := r.TCPConn.Write(r.send)
		r.send = nil
		if err != nil {
			r.failed = true
			return 0, err
		}
	}
	return r.TCPConn.Read(p)
}

// useHarvest: answers are read as they come (no receive times here).
func (r *rawIO) useHarvest(*harvest, chan struct{}) {}
