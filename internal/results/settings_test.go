package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestCellSettingsRoundTrip writes settings as a platform does, through a
// manifest file, and reads them back.
func TestCellSettingsRoundTrip(t *testing.T) {
	want := CellSettings{Version: 1, Mesh: "linkerd", App: "faces", Replicas: 3, Nodes: 2, Policies: 5, Protocol: "tcp", MTLS: true,
		Rate: "33.3", Duration: "10s", Warmup: "2s", Connections: 16, SampleInterval: "1s", Drain: "1m0s"}
	m := &RunManifest{Schema: RunSchema, Options: want.Options(map[string]any{"workers": 3})}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back RunManifest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.Settings()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	if back.Options["workers"] != float64(3) {
		t.Errorf("the platform's own key workers = %v, want 3", back.Options["workers"])
	}
	// Version 2's settings make the record version 2, which a reader of
	// version 1 refuses rather than read a bulk cell as an open loop.
	v2 := want
	v2.Version, v2.Rate, v2.Bulk, v2.Payload, v2.ProxyThreads, v2.Placement, v2.RequestsPerConnection, v2.Arrivals = 2, "", true, 1024, 2, "same-node", 1, "poisson"
	m2 := &RunManifest{Schema: RunSchema, Options: v2.Options(nil)}
	if got, err := m2.Settings(); err != nil || got != v2 {
		t.Errorf("version 2 read back %+v, %v; want %+v", got, err, v2)
	}
	// A record newer than this meshbench reads is refused, not misread.
	back.Options["settings_version"] = CellSettingsVersion + 1
	if _, err := back.Settings(); err == nil || !strings.Contains(err.Error(), "use a newer meshbench") {
		t.Errorf("settings_version %d: error %v", CellSettingsVersion+1, err)
	}
	back.Options["settings_version"] = CellSettingsVersion
	// A key of the wrong type is an error, not a silent zero.
	back.Options["replicas"] = "three"
	if _, err := back.Settings(); err == nil {
		t.Error("replicas \"three\" read without an error")
	}
}

// TestCellSettingsStoredManifests reads the manifests stored under
// analysis' testdata, written by earlier meshbench versions (0.1.0-dev,
// before CellSettings existed): every one validates against
// schema/cell-settings.v1.schema.json and reads back as the map said.
func TestCellSettingsStoredManifests(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("../../schema/cell-settings.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob("../analysis/testdata/*/cells/*/" + ManifestFile)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no stored manifests (%v)", err)
	}
	for _, p := range paths {
		m, err := ReadManifest(filepath.Dir(p))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Options json.RawMessage `json:"options"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc.Options))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: options do not validate: %v", p, err)
		}
		s, err := m.Settings()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		// Written before the version key existed: version 1.
		if s.Version != 1 {
			t.Errorf("%s: version %d, want 1", p, s.Version)
		}
		// Written back, the settings are the stored keys and values (and
		// the version key, new).
		again := s.Options(nil)
		delete(again, "settings_version")
		for k, v := range again {
			stored, _ := json.Marshal(m.Options[k])
			mine, _ := json.Marshal(v)
			if string(stored) != string(mine) {
				t.Errorf("%s: %s stored %s, read back %s", p, k, stored, mine)
			}
		}
		for k := range again {
			if _, ok := m.Options[k]; !ok {
				t.Errorf("%s: setting %s is not in the stored manifest", p, k)
			}
		}
	}
}

// TestCellSettingsControlPlaneSchema: the control_plane record the netns
// substrate writes (lab, istiod, linkerd, with what configured which
// proxies and keys of its own) validates against
// schema/cell-settings.v1.schema.json and reads back; a record without a
// name, another name, or a bare string does not validate.
func TestCellSettingsControlPlaneSchema(t *testing.T) {
	sch, err := jsonschema.NewCompiler().Compile("../../schema/cell-settings.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for cp, valid := range map[string]bool{
		`{"name": "lab", "what": "Linkerd's proxies: the lab's stand-in"}`:                            true,
		`{"name": "istiod", "what": "sidecars: …", "istio": "istio=1.31", "api_server_ready_s": 1.5}`: true,
		`{"name": "linkerd", "linkerd": "edge-26.8.3"}`:                                               true,
		`{"name": "other"}`:    false,
		`{"what": "sidecars"}`: false,
		`"lab"`:                false,
	} {
		base, err := json.Marshal(CellSettings{Mesh: "linkerd", App: "static", Replicas: 1, Nodes: 1, Protocol: "http", Rate: "100",
			Duration: "2s", Warmup: "1s", Connections: 16, SampleInterval: "1s", Drain: "1s", Substrate: "netns"}.Options(nil))
		if err != nil {
			t.Fatal(err)
		}
		opts := strings.TrimSuffix(string(base), "}") + `, "control_plane": ` + cp + `}`
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(opts))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); (err == nil) != valid {
			t.Errorf("control_plane %s: validation error %v, want valid %v", cp, err, valid)
		}
		if !valid {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(opts), &m); err != nil {
			t.Fatal(err)
		}
		s, err := (&RunManifest{Options: m}).Settings()
		if err != nil || s.ControlPlane == nil || !strings.Contains(cp, `"`+s.ControlPlane.Name+`"`) {
			t.Errorf("control_plane %s read back as %+v (%v)", cp, s.ControlPlane, err)
		}
	}
}
