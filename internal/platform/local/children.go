package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/sys/process"
)

// child is a meshbench process the lab runs: an app replica (`meshbench
// serve`) or the load generator (`meshbench load`).
type child struct {
	name      string
	component string
	category  string
	cmd       *exec.Cmd
	done      chan struct{}
	exitErr   error
	stopped   bool
	mu        sync.Mutex
	log       *os.File
	// control is an app's control socket (`serve --control`), "" for
	// none.
	control string
}

// startServe runs `meshbench serve ARGS` and waits for its READY line.
// in, when not nil, is the network to start it in (Network.Enter).
func startServe(ctx context.Context, in func(func() error) error, bin, name, component string, logPath string, args ...string) (*child, error) {
	c, stdout, err := startChild(in, bin, name, component, "app", logPath, append([]string{"serve"}, args...)...)
	if err != nil {
		return nil, err
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY ") {
				ready <- nil
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- errors.New("exited before it was ready")
	}()
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	select {
	case err := <-ready:
		if err != nil {
			<-c.done
			return c, fmt.Errorf("starting %s: %v%s", name, err, c.tail())
		}
		return c, nil
	case <-t.C:
		return c, fmt.Errorf("starting %s: not ready after 15s%s", name, c.tail())
	case <-ctx.Done():
		return c, ctx.Err()
	}
}

func startChild(in func(func() error) error, bin, name, component, category, logPath string, args ...string) (*child, io.Reader, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logf
	var stdout io.Reader
	if category == "app" {
		pr, err := cmd.StdoutPipe()
		if err != nil {
			logf.Close()
			return nil, nil, err
		}
		stdout = pr
	} else {
		cmd.Stdout = logf
	}
	c := &child{name: name, component: component, category: category, cmd: cmd, done: make(chan struct{}), log: logf}
	if err := startIn(cmd, in); err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		c.exitErr = err
		c.mu.Unlock()
		logf.Close()
		close(c.done)
	}()
	return c, stdout, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// tail returns the end of the child's log for error messages.
func (c *child) tail() string {
	b := process.ReadTail(c.log.Name(), 400)
	if len(b) == 0 {
		return ""
	}
	return ": " + strings.TrimSpace(string(b))
}

// unexpectedExit reports whether the child ended without being asked to.
func (c *child) unexpectedExit() error {
	select {
	case <-c.done:
	default:
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	return fmt.Errorf("%s (pid %d) exited unexpectedly (%v)%s", c.name, c.pid(), c.exitErr, c.tail())
}

// stop sends SIGTERM to the child's process group, waits up to grace,
// then kills the group (process.Stop).
func (c *child) stop(grace time.Duration) {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	process.Stop(c.pid(), c.done, grace)
}
