package cli

import (
	"regexp"
	"strings"
	"testing"
)

// TestVersion: `meshbench version` and --version print one line; -v is
// not --version (kubectl and istioctl use -v for verbosity).
func TestVersion(t *testing.T) {
	sub := runCLI(t, nil, "version")
	flag := runCLI(t, nil, "--version")
	if sub.code != ExitOK || !strings.HasPrefix(sub.stdout, "meshbench version "+Version+" (go") || strings.Count(sub.stdout, "\n") != 1 {
		t.Errorf("version: exit %d stdout %q", sub.code, sub.stdout)
	}
	if flag.code != ExitOK || flag.stdout != sub.stdout {
		t.Errorf("--version: exit %d stdout %q, want %q", flag.code, flag.stdout, sub.stdout)
	}
	if v := runCLI(t, nil, "-v"); v.code != ExitUsage {
		t.Errorf("-v: exit %d stdout %q, want exit %d (not a version flag)", v.code, v.stdout, ExitUsage)
	}
}

// TestHelpValueNames: a flag's help never takes a backticked phrase of its
// description as the value name ("--image make image", "--generator-path
// make generators"): in every command's help, a flag's value name is one
// word.
func TestHelpValueNames(t *testing.T) {
	twoWords := regexp.MustCompile(`^\s+(-\w, )?--[\w-]+ [^ ]+( [^ ]+)+  `)
	for _, cmd := range []string{"bench", "run", "load", "compare", "report", "merge", "doctor", "image", "serve", "version"} {
		inv := runCLI(t, nil, cmd, "--help")
		if inv.code != ExitOK {
			t.Fatalf("%s --help: exit %d", cmd, inv.code)
		}
		for _, line := range strings.Split(inv.stdout, "\n") {
			if twoWords.MatchString(line) {
				t.Errorf("%s --help: a value name of several words: %q", cmd, line)
			}
		}
	}
}
