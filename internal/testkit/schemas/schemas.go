// Package schemas knows meshbench's on-disk JSON formats: which file of a
// results directory each describes, its version, and its JSON Schema in
// schema/ — generated here from the Go types that write the files (with
// invopop/jsonschema) or, for the formats defined by hand, written there.
// ValidateTree checks every file of a results directory against its
// schema (santhosh-tekuri/jsonschema), so a test can hold every file a
// real run writes to its published format.
package schemas

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/results"
)

// BaseURL is the $id prefix of every schema; the file name follows it.
const BaseURL = "https://meshbench.dev/schema/"

// Format is one on-disk JSON format.
type Format struct {
	// Schema is the schema's file name in schema/.
	Schema string
	// Version is the value of the files' "schema" key; "" for a format
	// whose files carry none (Unversioned says why).
	Version     string
	Unversioned string
	// Files matches the files of a results directory the format describes,
	// by path relative to the run's directory (a cell's, in a plan).
	Files func(rel string) bool
	// JSONLines: every line of a file is one document.
	JSONLines bool
	// YAML: the file is YAML, validated as the JSON it converts to.
	YAML bool
	// Generate builds the schema from the Go types; nil when it is written
	// by hand in schema/.
	Generate func() (*jsonschema.Schema, error)
}

func base(name string) func(string) bool {
	return func(rel string) bool { return path.Base(rel) == name }
}

// Formats are meshbench's on-disk JSON formats.
var Formats = []Format{
	{Schema: "run-manifest.v1.schema.json", Version: results.RunSchema, Files: base(results.ManifestFile),
		Generate: versioned(&results.RunManifest{}, "meshbench run manifest, version 1", results.RunSchema,
			"One run (one benchmark cell): versions, host, options, phases, processes, validity and why, derived figures.")},
	{Schema: "plan-manifest.v1.schema.json", Version: results.PlanSchema, Files: base(results.PlanManifestFile),
		Generate: versioned(&results.PlanManifest{}, "meshbench plan manifest, version 1", results.PlanSchema,
			"A plan run: the seed, the cells' order and the state of every cell; rewritten after every cell.")},
	{Schema: "load-result.v1.schema.json", Version: results.LoadSchema, Files: base(results.LoadFile)},
	{Schema: "resources.v1.schema.json", Version: results.ResourcesSchema, Files: base(results.ResourcesFile), Generate: resourcesSchema},
	{Schema: "envoy-stats.v1.schema.json", Files: base(results.EnvoyStatsFile),
		Unversioned: "a map of proxy name to its stats, read as such: a version key would be read as a proxy",
		Generate:    mapOf(envoy.ProxyStats{}, "meshbench Envoy stats summary, version 1", "Proxy name → the counters meshbench extracts from its admin /stats at the end of the run.")},
	{Schema: "node-proxy-stats.v1.schema.json", Files: base(results.NodeProxyStatsFile),
		Unversioned: "a map of proxy name to its counters, read as such",
		Generate:    mapOf(results.NodeProxyStats{}, "meshbench node proxy stats, version 1", "Proxy name → its own TCP counters over the cell (Istio's standard metrics, end minus start).")},
	{Schema: "hops.v1.schema.json", Files: base("hops.json"),
		Unversioned: "written by the hop attribution as its result type; its shape is this schema's",
		Generate:    plain(&hops.Result{}, "meshbench hop attribution, version 1", "A cell's per-hop latency attribution (run --hops).")},
	{Schema: "samples.v1.schema.json", Version: sample.SamplesSchema, Files: base(results.SamplesFile), JSONLines: true},
	{Schema: "envoy-admin-stats.v1.schema.json", Version: envoy.AdminStatsSchema, Files: envoyAdminStats},
	{Schema: PlanFileSchema, Version: plan.FileSchema, Files: base(results.PlanFile), YAML: true, Generate: planFileSchema},
	{Schema: "capacity-search.v1.schema.json", Version: "meshbench.capacity-search/v1", Files: base("capacity.json")},
}

// envoyAdminStats matches envoy/NAME.stats.json (Envoy's own configs,
// envoy/NAME.json, are Envoy's bootstrap format and not meshbench's).
func envoyAdminStats(rel string) bool {
	return path.Base(path.Dir(rel)) == results.EnvoyDir && strings.HasSuffix(rel, ".stats.json")
}

func reflector() *jsonschema.Reflector {
	// Fields are not required by default: older files of the same
	// version lack fields added within it (omitempty, omitzero); unknown
	// fields are refused (additionalProperties false), as the readers do.
	return &jsonschema.Reflector{RequiredFromJSONSchemaTags: true, DoNotReference: true, ExpandedStruct: true}
}

// versioned is a schema of v's type whose "schema" key must be version.
func versioned(v any, title, version, desc string) func() (*jsonschema.Schema, error) {
	return func() (*jsonschema.Schema, error) {
		s := reflector().Reflect(v)
		s.Title, s.Description = title, desc
		if p, ok := s.Properties.Get("schema"); ok {
			p.Const = version
		}
		s.Required = append([]string{"schema"}, s.Required...)
		return s, nil
	}
}

func plain(v any, title, desc string) func() (*jsonschema.Schema, error) {
	return func() (*jsonschema.Schema, error) {
		s := reflector().Reflect(v)
		s.Title, s.Description = title, desc
		return s, nil
	}
}

// mapOf is a schema of an object whose every value is v's type.
func mapOf(v any, title, desc string) func() (*jsonschema.Schema, error) {
	return func() (*jsonschema.Schema, error) {
		item := reflector().Reflect(v)
		item.Version, item.ID = "", ""
		return &jsonschema.Schema{Version: jsonschema.Version, Title: title, Description: desc, Type: "object",
			AdditionalProperties: item}, nil
	}
}

// resourcesSchema: resources.json is written by every platform as
// sample.Resources, the keys a platform does not write left out; its
// "schema" key is absent in files written before it was added (meshbench
// 0.1.0-dev), which have this shape too, so it is not required.
func resourcesSchema() (*jsonschema.Schema, error) {
	s := reflector().Reflect(&sample.Resources{})
	s.Title = "meshbench resources, version 1"
	s.Description = "A run's resource figures over its measured window: the rule that chose the samples (window) and the summary per process, component, category and TOTAL; on a cluster also the metrics source, the drain, the nodes, and what the kubelet's counters or metrics.k8s.io said besides."
	if p, ok := s.Properties.Get("schema"); ok {
		p.Const = results.ResourcesSchema
		p.Description = "The format's version; absent in files written before it was added (meshbench 0.1.0-dev), which have this shape too."
	}
	return s, nil
}

// Generated renders every generated schema, by file name.
func Generated() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range Formats {
		if f.Generate == nil {
			continue
		}
		s, err := f.Generate()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Schema, err)
		}
		s.ID = jsonschema.ID(BaseURL + f.Schema)
		s.Version = jsonschema.Version
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Schema, err)
		}
		out[f.Schema] = append(b, '\n')
	}
	return out, nil
}

// Validated lists, per schema file, the files ValidateTree checked against
// it (paths relative to the tree's root); Unknown lists the JSON files no
// format claims (Envoy's own configs and admin dumps, SMP messages).
type Validated struct {
	BySchema map[string][]string
	Unknown  []string
}

// ValidateTree validates every .json and .jsonl file (and plan.yaml) under root against
// the schema of its format, loading the schemas from schemaDir, and
// returns what it checked; the error lists every file that fails.
func ValidateTree(root, schemaDir string) (*Validated, error) {
	c := validator.NewCompiler()
	// Every schema under its $id, so references between them resolve
	// without the network.
	names, err := filepath.Glob(filepath.Join(schemaDir, "*.schema.json"))
	if err != nil {
		return nil, err
	}
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		doc, err := validator.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", p, err)
		}
		if err := c.AddResource(BaseURL+filepath.Base(p), doc); err != nil {
			return nil, fmt.Errorf("schema %s: %w", p, err)
		}
	}
	compiled := map[string]*validator.Schema{}
	for _, f := range Formats {
		sch, err := c.Compile(BaseURL + f.Schema)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", f.Schema, err)
		}
		compiled[f.Schema] = sch
	}
	out := &Validated{BySchema: map[string][]string{}}
	var problems []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".jsonl") && path.Base(p) != results.PlanFile {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		var f *Format
		for i := range Formats {
			if Formats[i].Files(rel) {
				f = &Formats[i]
				break
			}
		}
		if f == nil {
			out.Unknown = append(out.Unknown, rel)
			return nil
		}
		if err := validateFile(compiled[f.Schema], p, f); err != nil {
			problems = append(problems, fmt.Sprintf("%s against %s: %v", rel, f.Schema, err))
		}
		out.BySchema[f.Schema] = append(out.BySchema[f.Schema], rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out.Unknown)
	if len(problems) > 0 {
		return out, fmt.Errorf("%d file(s) do not match their schema:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	return out, nil
}

func validateFile(sch *validator.Schema, p string, f *Format) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if f.YAML {
		if b, err = PlanYAMLToJSON(b); err != nil {
			return err
		}
	}
	if !f.JSONLines {
		doc, err := validator.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return err
		}
		return sch.Validate(doc)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		doc, err := validator.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err := sch.Validate(doc); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	return sc.Err()
}
