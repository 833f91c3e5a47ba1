// Package toolbin finds the prebuilt proxies meshbench runs beside its own
// processes (Istio's ztunnel, Linkerd's linkerd2-proxy): a path given on
// the command line, an environment variable, what `make NAME` installed
// into .tools, or the build kept beside the project in ../shared/bin —
// the last only when its sha256 is the one the project recorded for it.
package toolbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Binary describes one such program.
type Binary struct {
	// Name is the binary's file name: .tools/Name/Name, ../shared/bin/Name.
	Name string
	// SharedSHA256 is the sha256 of the build in ../shared/bin.
	SharedSHA256 string
	// Env names the environment variable that points at a binary.
	Env string
	// Flag is the command-line flag that does ("--ztunnel").
	Flag string
	// Make is the make target that installs it into .tools.
	Make string
}

// Find returns the binary to run: explicit if given (b.Flag's value), else
// $b.Env, else .tools/Name/Name (what `make Make` installs) or
// ../shared/bin/Name (checked against SharedSHA256) in dir or one of its
// parents.
func (b Binary) Find(explicit, dir string) (string, error) {
	for _, p := range []string{explicit, os.Getenv(b.Env)} {
		if p != "" {
			if !isFile(p) {
				return "", fmt.Errorf("%s binary %s: not a file", b.Name, p)
			}
			return p, nil
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if p := filepath.Join(d, ".tools", b.Name, b.Name); isFile(p) {
			return p, nil
		}
		if p := filepath.Join(d, "..", "shared", "bin", b.Name); isFile(p) {
			sum, err := FileSHA256(p)
			if err != nil {
				return "", err
			}
			if sum != b.SharedSHA256 {
				return "", fmt.Errorf("%s binary %s has sha256 %s, want %s", b.Name, p, sum, b.SharedSHA256)
			}
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no " + b.Name + " binary: run make " + b.Make + ", or set " + b.Env + " or " + b.Flag + " PATH")
		}
	}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// FileSHA256 returns the hex sha256 of a file.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
