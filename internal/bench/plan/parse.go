package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Parse reads a plan file. name is the file's name as problems show it;
// data is its YAML. It returns the plan with every default filled in, or
// every problem at once (errors.Join of *Problem, one line each,
// "NAME:LINE: FIELD VALUE: what is allowed"). An empty file is the
// default plan.
func Parse(name string, data []byte) (*Plan, error) {
	s := &source{file: name, entries: map[string]*entry{}}
	if name == "" {
		s.file = "plan"
	}
	root, ok := s.decode(data)
	if !ok {
		return nil, s.ps.err()
	}
	if root != nil {
		s.read(root)
	}
	return build(s)
}

// decode reads the one YAML document of data; root is nil for an empty
// file.
func (s *source) decode(data []byte) (root *yaml.Node, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decodeNode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		s.syntax(err)
		return nil, false
	}
	var next yaml.Node
	switch err := decodeNode(dec, &next); {
	case err == nil:
		s.ps.add(&Problem{File: s.file, Line: next.Line, Want: "a plan file holds one YAML document; remove the second (---)"})
		return nil, false
	case !errors.Is(err, io.EOF):
		s.syntax(err)
		return nil, false
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], true
	}
	return nil, true
}

// decodeNode is dec.Decode, with a panic in the YAML library turned into
// an error: a plan file must never crash meshbench.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: unreadable YAML (%v)", r)
		}
	}()
	return dec.Decode(n)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax records a YAML syntax error with its line.
func (s *source) syntax(err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	p := &Problem{File: s.file, Want: strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Want = m[2]
	}
	s.ps.add(p)
}

// resolve follows aliases (*name) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n != nil && n.Kind == yaml.AliasNode; i++ {
		n = n.Alias
	}
	return n
}

// read walks the top-level mapping.
func (s *source) read(root *yaml.Node) {
	root = resolve(root)
	if root == nil || root.Kind == yaml.AliasNode {
		s.ps.add(&Problem{File: s.file, Line: 1, Want: "a plan is a mapping of keys such as axes and duration"})
		return
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return // a file of comments only
	}
	s.mapping(root, "", "")
}

// mapping reads the keys of a mapping node at path prefix ("" for the top,
// "axes", "thresholds").
func (s *source) mapping(n *yaml.Node, prefix, field string) {
	if n.Kind != yaml.MappingNode {
		want := "allowed: a mapping of keys (" + strings.Join(knownKeys(prefix), ", ") + ")"
		if field == "" {
			want = "a plan is a mapping of keys (" + strings.Join(knownKeys(prefix), ", ") + "), not " + describe(n)
		}
		s.ps.add(&Problem{File: s.file, Line: n.Line, Field: field, Value: describe(n), Want: want, order: settingIndex(prefix)})
		return
	}
	known := knownKeys(prefix)
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolve(n.Content[i]), resolve(n.Content[i+1])
		if kn == nil || vn == nil {
			continue
		}
		if kn.Kind != yaml.ScalarNode {
			s.ps.add(&Problem{File: s.file, Line: kn.Line, Field: orTop(field), Want: "keys are names such as " + known[0]})
			continue
		}
		path := kn.Value
		if prefix != "" {
			path = prefix + "." + kn.Value
		}
		if l, dup := first[kn.Value]; dup {
			s.ps.add(&Problem{File: s.file, Line: kn.Line, Field: path, Want: fmt.Sprintf("given twice (first on line %d)", l), order: settingIndex(path)})
			continue
		}
		first[kn.Value] = kn.Line
		if !contains(known, kn.Value) {
			want := "unknown key; allowed: " + strings.Join(known, ", ")
			if g := suggest(kn.Value, known); g != "" {
				want = "unknown key (did you mean " + g + "?); allowed: " + strings.Join(known, ", ")
			}
			s.ps.add(&Problem{File: s.file, Line: kn.Line, Field: path, Want: want, order: 99})
			continue
		}
		if prefix == "" && (kn.Value == "axes" || kn.Value == "thresholds" || kn.Value == "search") {
			if kn.Value == "axes" {
				s.axesLine = kn.Line
			}
			if isNull(vn) {
				s.ps.add(&Problem{File: s.file, Line: kn.Line, Field: path, Want: "no value; remove the key for the defaults", order: settingIndex(path)})
				continue
			}
			s.mapping(vn, kn.Value, kn.Value)
			continue
		}
		s.value(path, kn.Line, vn)
	}
}

// value reads the value of setting path.
func (s *source) value(path string, keyLine int, n *yaml.Node) {
	st := schema[settingIndex(path)]
	e := &entry{line: keyLine}
	switch {
	case isNull(n):
		s.bad(path, keyLine, "", "no value; remove the key for the default")
		return
	case n.Kind == yaml.ScalarNode:
		e.items = []item{{text: n.Value, line: n.Line}}
	case n.Kind == yaml.MappingNode && path == "search.slo":
		// {p99: 5ms, errors: 0.1%}: one term per key, as "NAME<=VALUE".
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
			if k == nil || v == nil || k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
				s.bad(path, n.Line, describe(n), "allowed: a mapping of percentiles and errors to limits, such as {p99: 5ms, errors: 0.1%}")
				return
			}
			e.items = append(e.items, item{text: k.Value + "<=" + v.Value, line: k.Line})
		}
		if len(e.items) == 0 {
			s.bad(path, n.Line, "{}", "allowed: at least one limit, such as {p99: 5ms, errors: 0.1%}")
			return
		}
	case n.Kind == yaml.SequenceNode && st.axis:
		ok := true
		for _, c := range n.Content {
			c = resolve(c)
			if c == nil {
				continue
			}
			if c.Kind != yaml.ScalarNode || isNull(c) {
				s.bad(path, c.Line, describe(c), "allowed: a list of single values")
				ok = false
				continue
			}
			e.items = append(e.items, item{text: c.Value, line: c.Line})
		}
		if !ok {
			return
		}
		if len(e.items) == 0 {
			s.bad(path, n.Line, "[]", "allowed: one value or more; remove the key for the default")
			return
		}
	case st.axis:
		s.bad(path, n.Line, describe(n), "allowed: a list of values such as [a, b], or one value")
		return
	default:
		s.bad(path, n.Line, describe(n), "allowed: a single value, not a "+kindName(n))
		return
	}
	s.entries[path] = e
}

// knownKeys lists the keys allowed in the mapping at prefix.
func knownKeys(prefix string) []string {
	var out []string
	for _, st := range schema {
		k := st.key
		if prefix != "" {
			if !strings.HasPrefix(k, prefix+".") {
				continue
			}
			k = strings.TrimPrefix(k, prefix+".")
		} else if i := strings.IndexByte(k, '.'); i >= 0 {
			k = k[:i]
		}
		if !contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Style == 0 && (n.Value == "" || n.Value == "~" || strings.EqualFold(n.Value, "null"))
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	}
	return "value"
}

// describe shows a node in a problem: a quoted scalar, or [...] / {...}.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.SequenceNode:
		return "[...]"
	case yaml.MappingNode:
		return "{...}"
	}
	return ""
}

func orTop(field string) string {
	if field == "" {
		return "key"
	}
	return field
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
