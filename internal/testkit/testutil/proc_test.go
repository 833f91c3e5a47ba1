package testutil

import (
	"bytes"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveMeshbenchBuild()
	os.Exit(code)
}

func TestBuildMeshbenchOnce(t *testing.T) {
	a, b := BuildMeshbench(t), BuildMeshbench(t)
	if a != b {
		t.Errorf("two builds: %s and %s, want one", a, b)
	}
	if fi, err := os.Stat(a); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("%s is not an executable: %v", a, err)
	}
}

// TestStartServe runs the tcp workload as a separate process and echoes
// through it; the cleanup checks it exits 0 on SIGTERM.
func TestStartServe(t *testing.T) {
	addr := StartServe(t, "tcp")
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("READY address %q, want 127.0.0.1:PORT", addr)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := []byte("hello through a separate process")
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Errorf("echo %q, %v; want %q", got, err, msg)
	}
}

func TestReadyWriter(t *testing.T) {
	ready := make(chan string, 1)
	w := &readyWriter{ready: ready}
	// The READY line may arrive split across writes, after other lines.
	for _, s := range []string{"some log\nREA", "DY static 127.0.0.1:", "4242\nREADY static 127.0.0.1:1\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	select {
	case got := <-ready:
		if got != "127.0.0.1:4242" {
			t.Errorf("ready address %q, want 127.0.0.1:4242", got)
		}
	default:
		t.Fatal("no READY address seen")
	}
	select {
	case got := <-ready:
		t.Errorf("second READY address %q sent, want only the first", got)
	default:
	}
}
