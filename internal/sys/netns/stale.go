package netns

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// NamedDir is where named network namespaces are mounted (ip-netns(8)).
const NamedDir = "/run/netns"

// Named lists the named network namespaces whose names start with prefix
// ("" lists them all), sorted.
func Named(prefix string) ([]string, error) {
	ents, err := os.ReadDir(NamedDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// RemoveNamed removes what a substrate with prefix left behind when its
// process died without Close (SIGKILL): the named namespaces whose names
// start with prefix (their links, addresses and routes go with them once
// no process is left inside) and the links of the host's namespace with
// that prefix (a veth caught between its creation and its move). It
// returns the names it removed and goes on past failures. The caller
// must know that no live substrate uses prefix.
func RemoveNamed(prefix string) ([]string, error) {
	if prefix == "" {
		return nil, errors.New("removing namespaces: empty prefix")
	}
	names, err := Named(prefix)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, n := range names {
		if err := netns.DeleteNamed(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing network namespace %s: %w", n, err))
			continue
		}
		removed = append(removed, "netns "+n)
	}
	links, err := netlink.LinkList()
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range links {
		if n := l.Attrs().Name; strings.HasPrefix(n, prefix) {
			if err := delLink(n); err != nil {
				errs = append(errs, fmt.Errorf("removing link %s: %w", n, err))
				continue
			}
			removed = append(removed, "link "+n)
		}
	}
	return removed, errors.Join(errs...)
}
