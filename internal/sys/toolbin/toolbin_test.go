package toolbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFind walks the search order on real files: the flag, the
// environment variable, .tools in a parent, ../shared/bin only with the
// recorded sha256, and a message naming every way out when nothing is found.
func TestFind(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work", "repo")
	sub := filepath.Join(work, "internal", "x")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shared := write(filepath.Join(root, "work", "shared", "bin", "tool"), "shared build")
	sum, err := FileSHA256(shared)
	if err != nil {
		t.Fatal(err)
	}
	b := Binary{Name: "tool", SharedSHA256: "0000", Env: "MESHBENCH_TOOLBIN_TEST", Flag: "--tool", Make: "tool-target"}
	t.Setenv(b.Env, "")

	// The shared build with another sha256 is refused, naming both sums.
	if _, err := b.Find("", sub); err == nil || !strings.Contains(err.Error(), sum) || !strings.Contains(err.Error(), "want 0000") {
		t.Errorf("wrong sha256: %v", err)
	}
	// With the recorded sha256 it is taken, from a directory below the repo.
	b.SharedSHA256 = sum
	if got, err := b.Find("", sub); err != nil || got != shared {
		t.Errorf("shared build: %q, %v", got, err)
	}
	// What make installed into .tools wins over the shared build.
	tools := write(filepath.Join(work, ".tools", "tool", "tool"), "installed")
	if got, err := b.Find("", sub); err != nil || got != tools {
		t.Errorf(".tools: %q, %v; want %s", got, err, tools)
	}
	// The environment variable wins over both; the flag over everything.
	env := write(filepath.Join(root, "env-tool"), "env")
	t.Setenv(b.Env, env)
	if got, err := b.Find("", sub); err != nil || got != env {
		t.Errorf("env: %q, %v", got, err)
	}
	flag := write(filepath.Join(root, "flag-tool"), "flag")
	if got, err := b.Find(flag, sub); err != nil || got != flag {
		t.Errorf("flag: %q, %v", got, err)
	}
	// A path that is not a file is an error, not a fall-through.
	if _, err := b.Find(filepath.Join(root, "missing"), sub); err == nil || !strings.Contains(err.Error(), "not a file") {
		t.Errorf("missing explicit path: %v", err)
	}
	if _, err := b.Find(root, sub); err == nil || !strings.Contains(err.Error(), "not a file") {
		t.Errorf("a directory as the binary: %v", err)
	}
	// Nothing anywhere: the message names the make target, variable and flag.
	t.Setenv(b.Env, "")
	_, err = b.Find("", t.TempDir())
	for _, want := range []string{"no tool binary", "make tool-target", b.Env, "--tool PATH"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("nothing found: %v, want it to say %q", err, want)
		}
	}
}
