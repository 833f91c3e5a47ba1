package netlab

import (
	"os"
	"strings"

	"github.com/meshbench/meshbench/internal/sys/preflight"
)

// Check is one line of the local lab's preflight table (meshbench doctor
// --platform local): LabsCheck and UserNamespacesCheck are the netns
// substrate's rows beyond namespaces, iptables and ztunnel. It is a row
// of a preflight table, as the kube platform's checks give.
type Check = preflight.Result

// LabsCheck lists the labs on the host: live ones, ones of a dead
// meshbench (removed by the next netns lab) and namespaces named like a
// lab's without an owner record (an older meshbench's: perhaps live).
func LabsCheck() Check {
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

// UserNamespacesCheck says whether unprivileged user namespaces are
// allowed here (what a netns lab without root would need; the lab does
// not use them yet, so this is information).
func UserNamespacesCheck() Check {
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
