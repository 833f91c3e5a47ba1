package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// ReferenceDir is where the command reference lives in the repository,
// generated from the commands themselves (WriteReference).
const ReferenceDir = "docs/reference"

// referenceHeader starts every generated page: where it comes from.
const referenceHeader = "<!-- Generated from the commands by `go run ./hack/reference`; do not edit. -->\n\n"

// WriteReference writes the command reference into dir: one Markdown page
// per command (cobra's doc generator, as kubectl's reference is made),
// meshbench.md at its root, and removes pages of commands that are gone.
// Hidden commands are left out; nothing in a page depends on the machine
// or the time (no date line, no version).
func WriteReference(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "meshbench*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	root := referenceRoot()
	return doc.GenMarkdownTreeCustom(root, dir, func(string) string { return referenceHeader }, func(s string) string { return s })
}

// referenceRoot is the command tree as users get it, with process state
// that cannot leak into the pages: no environment, nothing to read.
func referenceRoot() *cobra.Command {
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	root := newRootCmd(env)
	home, _ := os.UserHomeDir()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		// A default under the home directory is written as ~/…: the
		// page is the same on every machine.
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if home != "" && home != "/" && strings.HasPrefix(f.DefValue, home+"/") {
				f.DefValue = "~" + strings.TrimPrefix(f.DefValue, home)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return root
}

// ReferenceCommands lists the commands the reference has a page for, as
// "meshbench run" (for the README's one line per command), with their
// short descriptions.
func ReferenceCommands() [][2]string {
	var out [][2]string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		if c.HasParent() {
			out = append(out, [2]string{c.CommandPath(), c.Short})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(referenceRoot())
	return out
}

// ReferencePage is the file name of a command's page ("meshbench run" →
// meshbench_run.md).
func ReferencePage(path string) string {
	return fmt.Sprintf("%s.md", strings.ReplaceAll(path, " ", "_"))
}
