package envoy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// AddrOwner is an address some process of the lab will listen on, and who
// (for the error message).
type AddrOwner struct {
	// Addr is "host:port" with a literal IP, e.g. "127.0.2.10:15006".
	Addr string
	// Owner names the user of the address, e.g. "server-0 sidecar inbound".
	Owner string
}

// CheckAddrsFree binds each address (TCP, plain SO_REUSEADDR as Go does,
// no SO_REUSEPORT) and closes it again, and reports every address that
// cannot be bound, all at once (errors.Join), one line each:
//
//	listener address 127.0.2.10:15006 (server-0 sidecar inbound) is already in use
//
// An address planned twice (port > 0) is reported too. Envoy listeners use
// SO_REUSEPORT by default, so a second Envoy on a busy address would start
// silently and share its traffic; run this before starting anything. The
// check is inherently racy (an address can be taken right after it), so it
// guards against leftovers and plan mistakes, not against a concurrent
// starter.
func CheckAddrsFree(addrs []AddrOwner) error {
	var errs []error
	seen := make(map[netip.AddrPort]AddrOwner)
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a.Addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("listener address %q (%s) is not ip:port: %v", a.Addr, a.Owner, err))
			continue
		}
		if ap.Port() != 0 {
			if first, dup := seen[ap]; dup {
				errs = append(errs, fmt.Errorf("listener address %s (%s) is also planned for %s", a.Addr, a.Owner, first.Owner))
				continue
			}
			seen[ap] = a
		}
		ln, err := net.Listen("tcp", ap.String())
		switch {
		case err == nil:
			_ = ln.Close()
		case errors.Is(err, syscall.EADDRINUSE):
			errs = append(errs, fmt.Errorf("listener address %s (%s) is already in use", a.Addr, a.Owner))
		default:
			errs = append(errs, fmt.Errorf("listener address %s (%s) cannot be bound: %v", a.Addr, a.Owner, unwrapOpError(err)))
		}
	}
	return errors.Join(errs...)
}

// unwrapOpError drops net.OpError's "listen tcp ADDR:" prefix, which the
// caller's message already carries.
func unwrapOpError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// checkLoopbackAddr accepts "ip:port" where ip is a loopback literal
// (127.0.0.0/8 or ::1) and port is 1–65535. what names the address in the
// error ("admin address").
func checkLoopbackAddr(what, addr string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s %q must be a loopback ip:port such as 127.0.2.10:15000", what, addr)
	}
	if !ap.Addr().Unmap().IsLoopback() {
		return netip.AddrPort{}, fmt.Errorf("%s %s is not on loopback: the lab keeps every Envoy on 127.0.0.0/8 or ::1", what, addr)
	}
	if ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s %s needs a fixed port (not 0)", what, addr)
	}
	return ap, nil
}
