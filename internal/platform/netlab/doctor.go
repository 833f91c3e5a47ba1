package netlab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/ztunnel"
)

// Check is one line of the local lab's preflight table (meshbench doctor
// --platform local).
type Check struct {
	Name   string
	OK     bool
	Warn   bool // not fatal: shown, but does not fail the preflight
	Detail string
}

// Doctor checks what the netns substrate needs on this host: network
// namespaces can be made (root), the iptables command for the pods'
// capture, a ztunnel (explicit: the --ztunnel flag; dir: the project
// directory) and its version, and the labs on the host, live or left by
// a dead meshbench. Without root, or without iptables or ztunnel, runs
// fall back to the loopback substrate (--substrate auto), so those are
// warnings; a stale lab is a warning too (the next lab removes it).
func Doctor(ctx context.Context, explicit, dir string) []Check {
	var out []Check
	if err := Available(false); err != nil {
		out = append(out, Check{Name: "network namespaces", Warn: true,
			Detail: err.Error() + "; runs use the loopback substrate (Envoy standing in for ztunnel)"})
	} else {
		out = append(out, Check{Name: "network namespaces", OK: true, Detail: "can be made (root)"})
	}
	if path, err := exec.LookPath("iptables"); err != nil {
		out = append(out, Check{Name: "iptables", Warn: true,
			Detail: "not found on PATH: the pods' capture (sidecar, ambient) needs it (Debian: apt-get install iptables)"})
	} else {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, err := exec.CommandContext(cctx, path, "--version").CombinedOutput()
		cancel()
		if err != nil {
			out = append(out, Check{Name: "iptables", Warn: true, Detail: fmt.Sprintf("%s --version: %v", path, err)})
		} else {
			out = append(out, Check{Name: "iptables", OK: true, Detail: strings.TrimSpace(string(v))})
		}
	}
	if bin, err := ztunnel.Find(explicit, dir); err != nil {
		out = append(out, Check{Name: "ztunnel", Warn: true, Detail: err.Error() + "; needed for ambient and waypoint on netns"})
	} else {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, err := ztunnel.Version(cctx, bin)
		cancel()
		if err != nil {
			out = append(out, Check{Name: "ztunnel", Detail: err.Error()})
		} else {
			out = append(out, Check{Name: "ztunnel", OK: true, Detail: bin + ": " + firstLine(v)})
		}
	}
	out = append(out, labsCheck())
	out = append(out, userNamespacesCheck())
	return out
}

// labsCheck lists the labs on the host: live ones, ones of a dead
// meshbench (removed by the next netns lab) and namespaces named like a
// lab's without an owner record (an older meshbench's: perhaps live).
func labsCheck() Check {
	c := Check{Name: "netns labs"}
	labs, err := Labs()
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	var live, dead, unknown []string
	for _, l := range labs {
		switch {
		case l.Owner == nil:
			unknown = append(unknown, l.String())
		case l.Alive:
			live = append(live, l.String())
		default:
			dead = append(dead, l.String())
		}
	}
	var parts []string
	if len(live) > 0 {
		parts = append(parts, "running: "+strings.Join(live, ", "))
	}
	if len(dead) > 0 {
		parts = append(parts, "left by a dead meshbench (the next netns run removes them): "+strings.Join(dead, ", "))
	}
	if len(unknown) > 0 {
		parts = append(parts, "without an owner record (an older meshbench; if none runs: ip netns del NAME): "+strings.Join(unknown, ", "))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	c.Detail = strings.Join(parts, "; ")
	c.OK = len(dead) == 0 && len(unknown) == 0
	c.Warn = !c.OK
	return c
}

// userNamespacesCheck says whether unprivileged user namespaces are
// allowed here (what a netns lab without root would need; the lab does
// not use them yet, so this is information).
func userNamespacesCheck() Check {
	c := Check{Name: "user namespaces", Warn: true}
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	n := strings.TrimSpace(string(b))
	if n == "0" {
		c.Detail = "disabled (user.max_user_namespaces = 0)"
		return c
	}
	c.OK, c.Warn = true, false
	c.Detail = "allowed (user.max_user_namespaces = " + n + "); the netns lab still needs root"
	return c
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
