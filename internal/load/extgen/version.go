package extgen

import (
	"context"
	"debug/buildinfo"
	"os/exec"
	"strings"
	"time"
)

// versionTimeout bounds a tool's version command.
const versionTimeout = 30 * time.Second

// runVersion runs a tool's version command (bin with args), at most
// versionTimeout, and returns what it printed on stdout and stderr.
func runVersion(ctx context.Context, bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	return exec.CommandContext(ctx, bin, args...).CombinedOutput()
}

// builtVersion reads the main module version a Go tool was built as (go
// install stamps it in the build info), without its "v": ok is false when
// bin is not a Go binary or its main module does not match (then the
// caller asks the tool's own version command).
func builtVersion(bin string, match func(modulePath, version string) bool) (version string, ok bool) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil || !match(bi.Path, bi.Main.Version) {
		return "", false
	}
	return strings.TrimPrefix(bi.Main.Version, "v"), true
}
