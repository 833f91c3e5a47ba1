package workload

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Kind: KindStatic}
	tests := []struct {
		name      string
		mutate    func(*Config)
		wantField []string // fields named by the problems, in order; nil = valid
	}{
		// The zero Faults and defaults are valid.
		{name: "defaults", mutate: func(*Config) {}},
		// Every fault set to a legal value.
		{name: "all faults", mutate: func(c *Config) {
			d, _ := ParseDistribution("exp:1ms")
			c.Listen = "127.0.0.1:0"
			c.BodySize = 1
			c.Faults = Faults{Delay: time.Millisecond, RandomDelay: d, StallEvery: time.Second, StallFor: time.Millisecond, ErrorRatio: 1, ErrorStatus: 503, Seed: 1}
		}},
		// Unknown kind.
		{name: "kind", mutate: func(c *Config) { c.Kind = "udp" }, wantField: []string{"kind"}},
		// Missing port.
		{name: "listen no port", mutate: func(c *Config) { c.Listen = "127.0.0.1" }, wantField: []string{"listen"}},
		// Port out of range.
		{name: "listen big port", mutate: func(c *Config) { c.Listen = "127.0.0.1:70000" }, wantField: []string{"listen"}},
		// Service names are not ports here.
		{name: "listen named port", mutate: func(c *Config) { c.Listen = "localhost:http" }, wantField: []string{"listen"}},
		// Negative body.
		{name: "body negative", mutate: func(c *Config) { c.BodySize = -1 }, wantField: []string{"body-size"}},
		// Body above the limit.
		{name: "body huge", mutate: func(c *Config) { c.BodySize = MaxBodySize + 1 }, wantField: []string{"body-size"}},
		// Negative delay.
		{name: "delay negative", mutate: func(c *Config) { c.Faults.Delay = -time.Millisecond }, wantField: []string{"delay"}},
		// Stall length without a period.
		{name: "stall-for alone", mutate: func(c *Config) { c.Faults.StallFor = time.Millisecond }, wantField: []string{"stall-for"}},
		// Stall period without a length.
		{name: "stall-every alone", mutate: func(c *Config) { c.Faults.StallEvery = time.Second }, wantField: []string{"stall-every"}},
		// Stall as long as its period: the server would never answer.
		{name: "stall-for = every", mutate: func(c *Config) { c.Faults.StallEvery, c.Faults.StallFor = time.Second, time.Second }, wantField: []string{"stall-for"}},
		// Ratio above 1.
		{name: "ratio high", mutate: func(c *Config) { c.Faults.ErrorRatio = 1.5 }, wantField: []string{"error-ratio"}},
		// NaN ratio.
		{name: "ratio NaN", mutate: func(c *Config) { c.Faults.ErrorRatio = math.NaN() }, wantField: []string{"error-ratio"}},
		// A bounded server: 4 at once, 2 ms each.
		{name: "concurrency", mutate: func(c *Config) { c.Concurrency, c.ServiceTime = 4, 2*time.Millisecond }},
		// A bound without a service time would answer instantly.
		{name: "concurrency no service time", mutate: func(c *Config) { c.Concurrency = 4 }, wantField: []string{"service-time"}},
		// A service time without a bound means nothing.
		{name: "service time alone", mutate: func(c *Config) { c.ServiceTime = time.Millisecond }, wantField: []string{"service-time"}},
		// Negative bound.
		{name: "concurrency negative", mutate: func(c *Config) { c.Concurrency = -1 }, wantField: []string{"concurrency"}},
		// A success status is not an error status.
		{name: "status 200", mutate: func(c *Config) { c.Faults.ErrorStatus = 200 }, wantField: []string{"error-status"}},
		// Every problem is reported at once.
		{name: "many", mutate: func(c *Config) {
			c.Kind = ""
			c.BodySize = -5
			c.Faults.ErrorRatio = -1
		}, wantField: []string{"kind", "body-size", "error-ratio"}},
	}
	for _, tt := range tests {
		c := ok
		tt.mutate(&c)
		err := c.Validate()
		if got := configErrorFields(t, err); strings.Join(got, ",") != strings.Join(tt.wantField, ",") {
			t.Errorf("%s: Validate() = %v; fields %q, want %q", tt.name, err, got, tt.wantField)
		}
	}
}

// configErrorFields returns the Field of every *ConfigError joined in err,
// failing the test on anything else or on a multi-line problem.
func configErrorFields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *ConfigError
		if !errors.As(e, &ce) {
			t.Fatalf("problem %v is not a *ConfigError", e)
		}
		if strings.Contains(ce.Error(), "\n") {
			t.Fatalf("problem %q spans lines", ce.Error())
		}
		fields = append(fields, ce.Field)
	}
	return fields
}

func TestStaticBody(t *testing.T) {
	// The default is nginx's welcome page, byte for byte.
	b := StaticBody(DefaultBodySize)
	if len(b) != 615 {
		t.Fatalf("default body is %d bytes, want 615", len(b))
	}
	// sha256 of nginx 1.21+ html/index.html.
	const nginxSHA256 = "fb47468a2cd3953c7131431991afcc6a2703f14640520102eea0a685a7e8d6de"
	if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != nginxSHA256 {
		t.Errorf("default body sha256 = %s, want %s", got, nginxSHA256)
	}
	for _, s := range []string{"<title>Welcome to nginx!</title>", "html { color-scheme: light dark; }", "<p><em>Thank you for using nginx.</em></p>\n</body>\n</html>\n"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("default body lacks %q", s)
		}
	}
	// Other sizes: exactly that many bytes, deterministic.
	for _, n := range []int{0, 1, 616, 100_000} {
		a, b := StaticBody(n), StaticBody(n)
		if len(a) != n || string(a) != string(b) {
			t.Errorf("StaticBody(%d): %d bytes, deterministic=%v", n, len(a), string(a) == string(b))
		}
	}
}

// nopWriter is a reusable ResponseWriter that keeps nothing.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}

// TestStaticHandlerAllocs guards the hot path of 5000+ rps benchmarks: the
// handler itself allocates nothing per request.
func TestStaticHandlerAllocs(t *testing.T) {
	h := &staticHandler{inj: newInjector(Faults{}, nil, time.Now()), body: StaticBody(615), hdrLen: []string{"615"}, errStatus: 500}
	w := &nopWriter{h: make(http.Header)}
	r, err := http.NewRequest("GET", "http://127.0.0.1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("static handler allocates %v times per request, want 0", n)
	}
}
