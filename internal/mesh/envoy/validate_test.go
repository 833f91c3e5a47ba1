package envoy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	bin := envoyBin(t)
	dir := t.TempDir()
	ip := loopbackIP()
	admin, listener := ip+":15000", ip+":8080" // validate binds nothing
	good := writeFile(t, dir, "good.yaml", testConfig(admin, listener, "ok"), 0o644)
	bad := writeFile(t, dir, "bad.yaml", brokenConfig(admin, listener), 0o644)
	// Parses, but routes to a cluster that does not exist. (Envoy 1.40's
	// validate mode does accept two listeners with the same name.)
	noCluster := writeFile(t, dir, "nocluster.yaml", strings.Replace(testConfig(admin, listener, "ok"),
		`direct_response: {status: 200, body: {inline_string: "ok"}}`, `route: {cluster: nope}`, 1), 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Validate(ctx, bin, good); err != nil {
		t.Errorf("good config: %v", err)
	}

	tests := []struct {
		name, path string
		want       []string // substrings of the one-line error
	}{
		// Envoy's protobuf message names the unknown field.
		{"unknown field", bad, []string{"envoy rejected config " + bad + ": ", "no such field: 'direct_respons'"}},
		{"unknown cluster", noCluster, []string{"envoy rejected config " + noCluster + ": ", "route: unknown cluster 'nope'"}},
		{"missing file", filepath.Join(dir, "nope.yaml"), []string{"Invalid path: " + filepath.Join(dir, "nope.yaml")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(ctx, bin, tt.path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestEnvoyMessage(t *testing.T) {
	tests := []struct {
		name, output string
		anyLevel     bool
		want         string
	}{
		// Validate mode: the critical line, without its prefix.
		{"critical", "[2026-11-22 03:33:01.155][9522][info][main] [source/server/server.cc:989] runtime: {}\n" +
			"[2026-11-22 03:33:01.199][9525][critical][main] [source/server/config_validation/server.cc:76] error initializing configuration 'bad.yaml': boom\n",
			true, "error initializing configuration 'bad.yaml': boom"},
		// A multi-line message is joined onto one line.
		{"continuation", "[2026-11-22 03:34:12.038][10307][critical][main] [source/server/server.cc:449] error `cannot bind` initializing config 'goo.gle/debugonly    \n  good.yaml'\n",
			true, "error `cannot bind` initializing config 'goo.gle/debugonly good.yaml'"},
		// Serve mode with --log-path: stderr holds only the bare reason.
		{"bare stderr", "cannot bind '127.0.77.1:15000': Address already in use\n", false,
			"cannot bind '127.0.77.1:15000': Address already in use"},
		// Errors win over a later bare line; repeated ones count once.
		{"errors first", "[t][1][error][x] [a.cc:1] e1\n[t][1][error][x] [a.cc:1] e1\n[t][1][critical][x] [a.cc:2] c2\nbare\n", false, "e1; c2"},
		// Only warnings: nothing meaningful for an exit message…
		{"warnings only", "[t][1][warning][main] [s.cc:1] There is no configured limit\n", false, ""},
		// …but validate falls back to the last message.
		{"warnings only, any level", "[t][1][warning][main] [s.cc:1] There is no configured limit\n", true, "There is no configured limit"},
		{"empty", "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := envoyMessage(tt.output, tt.anyLevel); got != tt.want {
				t.Errorf("envoyMessage = %q, want %q", got, tt.want)
			}
		})
	}
}
