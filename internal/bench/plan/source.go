package plan

import (
	"strconv"
	"strings"
)

// setting is one key of the plan schema.
type setting struct {
	key  string // path in the file: "duration", "axes.rate"
	flag string // the `meshbench bench` flag, without dashes
	axis bool   // a list crossed into configurations
}

// schema lists the plan's settings in the order the canonical YAML writes
// them and problems of one line (or of flags) are sorted.
var schema = []setting{
	{key: "schema"}, // the file format's version (FileSchema); files only
	{key: "name", flag: "name"},
	{key: "platform", flag: "platform"},
	{key: "seed", flag: "seed"},
	{key: "repetitions", flag: "repetitions"},
	{key: "axes.mesh", flag: "mesh", axis: true},
	{key: "axes.app", flag: "app", axis: true},
	{key: "axes.rate", flag: "rate", axis: true},
	{key: "axes.load_model", flag: "load-model", axis: true},
	{key: "axes.replicas", flag: "replicas", axis: true},
	{key: "axes.policies", flag: "policies", axis: true},
	{key: "axes.protocol", flag: "protocol", axis: true},
	{key: "axes.gateway", flag: "gateway", axis: true},
	{key: "axes.mtls", flag: "mtls", axis: true},
	{key: "axes.generator", flag: "generator", axis: true},
	{key: "axes.fault", flag: "fault", axis: true},
	{key: "axes.connections", flag: "connections", axis: true},
	{key: "axes.payload", flag: "payload", axis: true},
	{key: "axes.proxy_threads", flag: "proxy-threads", axis: true},
	{key: "axes.requests_per_connection", flag: "requests-per-connection", axis: true},
	{key: "axes.placement", flag: "placement", axis: true},
	{key: "axes.arrivals", flag: "arrivals", axis: true},
	{key: "nodes", flag: "nodes"},
	{key: "duration", flag: "duration"},
	{key: "warmup", flag: "warmup"},
	{key: "drain", flag: "drain"},
	{key: "connections", flag: "connections"},
	{key: "send_tick", flag: "send-tick"},
	{key: "sample_interval", flag: "sample-interval"},
	{key: "pss_every", flag: "pss-every"},
	{key: "reuse_topology", flag: "reuse-topology"},
	{key: "substrate", flag: "substrate"},
	{key: "control_plane", flag: "control-plane"},
	{key: "workers", flag: "workers"},
	{key: "generator", flag: "generator-one"}, // one value, as plans before axes.generator wrote it (files only)
	{key: "baseline", flag: "baseline"},
	{key: "compare", flag: "compare", axis: true},
	{key: "thresholds.rate_shortfall", flag: "max-rate-shortfall"},
	{key: "thresholds.errors", flag: "max-errors"},
	{key: "thresholds.load_cpu", flag: "max-load-cpu"},
	{key: "confidence", flag: "confidence"},
	{key: "search.slo", flag: "slo"},
	{key: "search.from", flag: "search-from"},
	{key: "search.to", flag: "search-to"},
	{key: "search.precision", flag: "search-precision"},
	{key: "search.growth", flag: "search-growth"},
	{key: "search.confirm", flag: "search-confirm"},
	{key: "app_concurrency", flag: "app-concurrency"},
	{key: "app_service_time", flag: "app-service-time"},
	{key: "body_size", flag: "body-size"},
	{key: "app_delay", flag: "app-delay"},
	{key: "app_delay_dist", flag: "app-delay-dist"},
	{key: "app_error_ratio", flag: "app-error-ratio"},
	{key: "app_error_status", flag: "app-error-status"},
	{key: "app_stall_every", flag: "app-stall-every"},
	{key: "app_stall_for", flag: "app-stall-for"},
	{key: "app_seed", flag: "app-seed"},
	{key: "hops", flag: "hops"},
}

// keyAxes stands for the matrix as a whole in problems about it.
const keyAxes = "axes"

func settingIndex(key string) int {
	for i, s := range schema {
		if s.key == key {
			return i
		}
	}
	if key == keyAxes {
		return settingIndex("axes.mesh") // with the first axis
	}
	return -1
}

// item is one value as written, with its line (0 for flags).
type item struct {
	text string
	line int
}

// entry is a setting that was given.
type entry struct {
	line  int    // the key's line (0 for flags)
	items []item // one for a scalar; the list of an axis
}

// source is a plan as written, before its values are read: a file's keys
// with their lines, or flags. Both are read by build, so a file and flags
// are checked alike.
type source struct {
	file    string            // "" for flags
	entries map[string]*entry // by setting key
	// axesLine is the line of the "axes" key (0: absent, or flags).
	axesLine int
	ps       problems
}

// field names a setting in a problem: its path in a file, its flag
// otherwise.
func (s *source) field(key string) string {
	if s.file != "" {
		return key
	}
	if key == keyAxes {
		return "matrix"
	}
	for _, st := range schema {
		if st.key == key {
			return "--" + st.flag
		}
	}
	return key
}

// bad records a problem with a value of key.
func (s *source) bad(key string, line int, value, want string) {
	s.ps.add(&Problem{File: s.file, Line: line, Field: s.field(key), Value: value, Want: want, order: settingIndex(key)})
}

// badItem records a problem with one written value, quoted.
func (s *source) badItem(key string, it item, want string) {
	s.bad(key, it.line, strconv.Quote(it.text), want)
}

// lineOf is the line to report a problem of key at: the key's own line,
// or, when the key is absent, the line of the axes (or line 1) in a file.
func (s *source) lineOf(key string) int {
	if e := s.entries[key]; e != nil {
		return e.line
	}
	if s.file == "" {
		return 0
	}
	if e := s.entries["axes.mesh"]; e != nil {
		return e.line
	}
	if s.axesLine > 0 {
		return s.axesLine
	}
	return 1
}

// suggest returns the known name closest to name when it is a likely typo
// (at most 2 edits), or "".
func suggest(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b (bytes).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Keys lists every key a plan file takes, as dotted paths ("duration",
// "axes.rate", "search.slo"), in the order YAML writes them; Axis reports
// whether key takes a list. The plan file's JSON Schema (internal/testkit/schemas)
// is checked against them.
func Keys() []string {
	out := make([]string, len(schema))
	for i, s := range schema {
		out[i] = s.key
	}
	return out
}

// Axis reports whether key (one of Keys) takes a list of values.
func Axis(key string) bool {
	i := settingIndex(key)
	return i >= 0 && schema[i].axis
}
