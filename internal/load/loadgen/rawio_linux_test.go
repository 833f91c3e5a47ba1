//go:build linux

package loadgen

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestRawIOArrival: the receive time rawIO reports is when the answer
// reached the socket, not when it was read: the test reads it 100 ms after
// the server has written it, and the arrival lies between the server's
// call to write the answer (never before: no client could have it then)
// and the server's signal. A request queued for the next read is written
// by that read.
//
// The first exchange is not checked: the kernel turns receive stamping on
// for the whole system a moment after the first socket asks (a deferred
// static key), so a connection's first answers may come unstamped. The
// engine reads lazily only once a connection's answers carry stamps.
func TestRawIOArrival(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	answer := []byte("pong")
	type write struct{ before, after time.Time } // the server's Write call
	wrote := make(chan write, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		for range 3 {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			before := time.Now()
			if _, err := c.Write(answer); err != nil {
				return
			}
			wrote <- write{before, time.Now()}
		}
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := newRawIO(c.(*net.TCPConn))
	if r == nil {
		t.Fatal("no raw form of a TCP connection")
	}
	if _, err := r.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	<-wrote
	if _, err := io.ReadFull(r, make([]byte, len(answer))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	for _, queued := range []bool{false, true} {
		sent := time.Now()
		if queued {
			r.queue([]byte("ping"))
		} else if _, err := r.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		var answered write
		if queued {
			// The read writes the request, then waits for the answer.
			buf := make([]byte, 16)
			n, err := r.Read(buf)
			if err != nil || !bytes.Equal(buf[:n], answer) {
				t.Fatalf("queued: read %q, %v", buf[:n], err)
			}
			answered = <-wrote
		} else {
			answered = <-wrote
			time.Sleep(100 * time.Millisecond)
			buf := make([]byte, 16)
			n, err := r.Read(buf)
			if err != nil || !bytes.Equal(buf[:n], answer) {
				t.Fatalf("read %q, %v", buf[:n], err)
			}
			if late := time.Since(time.Unix(0, r.arrival())); late < 90*time.Millisecond {
				t.Errorf("arrival %v before the read, want the 100 ms the answer waited", late)
			}
		}
		if r.arrival() == 0 {
			t.Fatalf("queued=%v: no receive time (does this kernel stamp TCP with SO_TIMESTAMPNS?)", queued)
		}
		if got := time.Unix(0, r.arrival()); got.Before(sent) || got.Before(answered.before) || got.After(answered.after.Add(50*time.Millisecond)) {
			t.Errorf("queued=%v: arrival %v, want after the send %v and the server's write call %v, before its end %v",
				queued, got.Format(time.StampMicro), sent.Format(time.StampMicro),
				answered.before.Format(time.StampMicro), answered.after.Format(time.StampMicro))
		}
	}
}
