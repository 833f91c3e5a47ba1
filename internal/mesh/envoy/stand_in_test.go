package envoy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// standInEnv makes the test binary act as a stand-in for an Envoy that
// ignores SIGTERM (a hung Envoy), which the real one cannot be made to do;
// its value is the admin ip:port to serve /ready on.
const standInEnv = "MESHBENCH_ENVOY_STAND_IN_ADMIN"

func TestMain(m *testing.M) {
	if admin := os.Getenv(standInEnv); admin != "" {
		standInMain(admin)
		return
	}
	os.Exit(m.Run())
}

// standInMain ignores SIGTERM, serves GET /ready "LIVE" on admin, writes
// --admin-address-path like Envoy, and exits by itself after a minute.
func standInMain(admin string) {
	signal.Ignore(syscall.SIGTERM)
	ln, err := net.Listen("tcp", admin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i, a := range os.Args {
		if a == "--admin-address-path" && i+1 < len(os.Args) {
			_ = os.WriteFile(os.Args[i+1], []byte(ln.Addr().String()), 0o644)
		}
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "LIVE")
		}))
	}()
	time.Sleep(time.Minute)
	os.Exit(0)
}

// A process that ignores SIGTERM is killed after the grace; a StopAll whose
// context has ended (a second Ctrl-C) kills at once.
func TestStopAllEscalatesToSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "unused.yaml", "{}", 0o644)
	self := &Binary{Path: os.Args[0], Version: PinnedVersion}
	for _, tt := range []struct {
		name      string
		cancelled bool
	}{
		{"grace", false},    // SIGTERM, 300 ms, SIGKILL
		{"cancelled", true}, // SIGTERM, SIGKILL at once
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSupervisor(self, SupervisorOptions{StopGrace: 300 * time.Millisecond})
			admin := freeAddr(t, loopbackIP())
			p, err := s.Start(context.Background(), Spec{
				Name: "hung", ConfigPath: cfg, AdminAddr: admin, Env: []string{standInEnv + "=" + admin},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if !p.exited() {
					_ = syscall.Kill(p.PID, syscall.SIGKILL) // the test failed: still stop it, by PID
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancelled {
				cancel()
			}
			defer cancel()
			start := time.Now()
			err = s.StopAll(ctx)
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`envoy "hung" (pid %d) was still running`, p.PID)) ||
				!strings.Contains(err.Error(), "after SIGTERM: sent SIGKILL") {
				t.Errorf("StopAll = %v", err)
			}
			if tt.cancelled && took > 200*time.Millisecond {
				t.Errorf("StopAll with an ended context took %v", took)
			}
			if !tt.cancelled && took < 300*time.Millisecond {
				t.Errorf("StopAll took %v, less than the grace", took)
			}
			if !p.exited() || !procGone(p.PID, cfg) {
				t.Errorf("pid %d still runs", p.PID)
			}
			if err := p.ExitErr(); err != nil {
				t.Errorf("ExitErr of a stopped process = %v", err)
			}
			t.Logf("StopAll in %v: %v", took.Round(time.Millisecond), err)
		})
	}
}
