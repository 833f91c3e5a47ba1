package loadgen

import (
	"slices"
	"testing"
	"time"
)

func TestParseLoad(t *testing.T) {
	tests := []struct {
		in     string
		closed bool
		rate   Rate   // open loop: the exact rate
		text   string // String(): what the child's --rate (or "max") gets
		flags  []string
	}{
		{"max", true, Rate{}, "max", []string{"--max"}},                                  // the closed loop's one spelling
		{" max ", true, Rate{}, "max", []string{"--max"}},                                // spaces as ParseRate allows them
		{"100", false, Rate{1, 10 * time.Millisecond}, "100", []string{"--rate", "100"}}, // plain per second
		{"33.3", false, Rate{333, 10 * time.Second}, "33.3", []string{"--rate", "33.3"}}, // exact decimal kept
		{"1000/s", false, Rate{1, time.Millisecond}, "1000", []string{"--rate", "1000"}}, // unit spelled: canonical form drops it
		{"60/m", false, Rate{1, time.Second}, "1", []string{"--rate", "1"}},              // reduced: 60 a minute is 1 a second
		{"1/3s", false, Rate{1, 3 * time.Second}, "1/3s", []string{"--rate", "1/3s"}},    // no exact decimal: FREQ/PERIOD
		{"0.5", false, Rate{1, 2 * time.Second}, "0.5", []string{"--rate", "0.5"}},       // below one a second
	}
	for _, tt := range tests {
		l, err := ParseLoad(tt.in)
		if err != nil {
			t.Fatalf("ParseLoad(%q): %v", tt.in, err)
		}
		if l.Closed() != tt.closed || l.Rate() != tt.rate || l.String() != tt.text || !slices.Equal(l.Flags(), tt.flags) {
			t.Errorf("ParseLoad(%q) = closed %v rate %+v %q %q, want %v %+v %q %q", tt.in, l.Closed(), l.Rate(), l, l.Flags(), tt.closed, tt.rate, tt.text, tt.flags)
		}
		if back, err := ParseLoad(l.String()); err != nil || back != l {
			t.Errorf("ParseLoad(%q).String() = %q reads back as %+v, %v", tt.in, l, back, err)
		}
	}
	for _, bad := range []string{"", "Max", "closed", "0", "-1", "x", "max/s"} { // only "max" names the closed loop
		if l, err := ParseLoad(bad); err == nil {
			t.Errorf("ParseLoad(%q) = %v, want an error", bad, l)
		}
	}
	if !(Load{}).IsZero() || ClosedLoop.IsZero() || ClosedLoop.RateText() != "" || (Load{}).String() != "" {
		t.Error("zero Load or ClosedLoop misreported")
	}
	// Bulk: neither a rate nor the closed loop; "bulk" both ways.
	b, err := ParseLoad("bulk")
	if err != nil || b != Bulk || !b.Bulk() || b.Closed() || b.RateText() != "" || b.String() != "bulk" || !slices.Equal(b.Flags(), []string{"--bulk"}) {
		t.Errorf("ParseLoad(bulk) = %+v, %v; flags %q", b, err, b.Flags())
	}
}

// FuzzParseLoad: whatever ParseLoad accepts, its String reads back as the
// same Load.
func FuzzParseLoad(f *testing.F) {
	for _, s := range []string{"max", "bulk", "100", "33.3", "60/m", "1/3s", "5/100ms", "0.000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLoad(s)
		if err != nil {
			return
		}
		back, err := ParseLoad(l.String())
		if err != nil || back != l {
			t.Fatalf("ParseLoad(%q) = %+v; String %q reads back as %+v, %v", s, l, l.String(), back, err)
		}
	})
}

func TestRateOf(t *testing.T) {
	tests := []struct {
		in   float64
		want string // Text(); "" for an error
	}{
		{100, "100"},         // whole
		{33.3, "33.3"},       // a decimal kept exact, not 33.29999…
		{0.0004, ""},         // rounds to 0: below a thousandth
		{12.34567, "12.346"}, // rounded to the thousandth, as capacity.FormatRate prints it
		{2e7, ""},            // above the maximum
	}
	for _, tt := range tests {
		r, err := RateOf(tt.in)
		got := ""
		if err == nil {
			got = r.Text()
		}
		if got != tt.want {
			t.Errorf("RateOf(%g) = %q (%v), want %q", tt.in, got, err, tt.want)
		}
		if err == nil {
			if p, _ := ParseRate(got); p != r {
				t.Errorf("RateOf(%g) = %+v, ParseRate(%q) = %+v", tt.in, r, got, p)
			}
		}
	}
}
