package envoy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// maxMessageBytes bounds the Envoy message carried by an error.
const maxMessageBytes = 600

// Validate checks a config file with `envoy --mode validate -c FILE
// --disable-hot-restart`, which parses the whole bootstrap and builds every
// listener and cluster without binding anything (typically 40 ms). A
// rejected config gives an error carrying Envoy's own message, on one line
// when Envoy's message fits (at most 600 bytes of it).
func Validate(ctx context.Context, bin *Binary, configPath string) error {
	if bin == nil || bin.Path == "" {
		return errors.New("validating envoy config: no envoy binary (use envoy.Find)")
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin.Path, "--mode", "validate", "-c", configPath,
		"--disable-hot-restart", "--log-level", "warn")
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("validating %s with envoy: %w", configPath, ctxErr)
	}
	msg := envoyMessage(out.String(), true)
	if msg == "" {
		msg = err.Error()
	}
	return fmt.Errorf("envoy rejected config %s: %s", configPath, msg)
}

// logPrefixRE matches Envoy's default log line prefix
// "[2026-11-22 03:33:01.199][9525][critical][main] [source/x.cc:76] " and
// captures the level.
var logPrefixRE = regexp.MustCompile(`^\[[^\]]*\]\[\d+\]\[(\w+)\]\[[^\]]*\] (?:\[[^\]]*\] )?`)

// logEntry is one message from Envoy's output: a prefixed log line with its
// continuation lines, or a bare line (what Envoy prints on stderr as it
// exits on a fatal error).
type logEntry struct {
	level string // "critical", "error", "warning", …; "" for a bare line
	text  string
}

func parseLog(output string) []logEntry {
	var entries []logEntry
	inLog := false
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			inLog = false
			continue
		}
		if m := logPrefixRE.FindStringSubmatchIndex(line); m != nil {
			entries = append(entries, logEntry{level: line[m[2]:m[3]], text: line[m[1]:]})
			inLog = true
			continue
		}
		if inLog && strings.HasPrefix(line, " ") {
			// Continuation of a multi-line log message.
			last := &entries[len(entries)-1]
			last.text += " " + strings.TrimSpace(line)
			continue
		}
		inLog = false
		entries = append(entries, logEntry{text: line})
	}
	return entries
}

// envoyMessage picks the meaningful part of Envoy's output: its critical
// and error log messages (the last three), else its last bare line, else
// (when anyLevel) its last log message of any level; squeezed onto one
// line.
func envoyMessage(output string, anyLevel bool) string {
	entries := parseLog(output)
	var picked []string
	for _, e := range entries {
		if e.level == "critical" || e.level == "error" {
			picked = appendDistinct(picked, e.text)
		}
	}
	if len(picked) == 0 {
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].level == "" {
				picked = []string{entries[i].text}
				break
			}
		}
	}
	if len(picked) == 0 && anyLevel && len(entries) > 0 {
		picked = []string{entries[len(entries)-1].text}
	}
	if len(picked) > 3 {
		picked = picked[len(picked)-3:]
	}
	return oneLine(strings.Join(picked, "; "), maxMessageBytes)
}

func appendDistinct(list []string, s string) []string {
	for _, have := range list {
		if have == s {
			return list
		}
	}
	return append(list, s)
}
