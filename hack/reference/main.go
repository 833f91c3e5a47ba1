// Command reference regenerates docs/reference/, the command reference,
// from the commands themselves: run it from the repository's root after
// changing a command, a flag or a help text (internal/cli's
// TestReferenceFresh fails until then).
package main

import (
	"fmt"
	"os"

	"github.com/meshbench/meshbench/internal/cli"
)

func main() {
	if err := cli.WriteReference(cli.ReferenceDir); err != nil {
		fmt.Fprintln(os.Stderr, "reference:", err)
		os.Exit(1)
	}
}
