package loadgen

import (
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		freq    uint64
		per     time.Duration
		wantErr bool
	}{
		{"1000", 1000, time.Second, false},            // plain per second
		{"33.3", 333, 10 * time.Second, false},        // fraction kept exactly
		{"0.5", 1, 2 * time.Second, false},            // below one per second
		{"1000/s", 1000, time.Second, false},          // explicit unit
		{"60/m", 1, time.Second, false},               // reduced: 60 per minute is 1 per second
		{"5/100ms", 50, time.Second, false},           // duration unit
		{"1/1h", 1, time.Hour, false},                 // slow
		{"2.25", 9, 4 * time.Second, false},           // reduced 225/100
		{"0", 0, 0, true},                             // zero is not a rate
		{"-5", 0, 0, true},                            // negative
		{"abc", 0, 0, true},                           // not a number
		{"", 0, 0, true},                              // empty
		{"10/0s", 0, 0, true},                         // zero period
		{"1e3", 0, 0, true},                           // exponents are not accepted
		{"0.0000000001", 0, 0, true},                  // more than 9 decimals
		{"20000000", 0, 0, true},                      // above the maximum
		{"1.", 1, time.Second, false},                 // trailing dot
		{".5", 1, 2 * time.Second, false},             // leading dot
		{"10/fortnight", 0, 0, true},                  // unknown unit
		{"18446744073709551615", 0, 0, true},          // huge
		{"0.000000001/1h", 0, 0, true},                // period × scale overflows
		{" 100 ", 100, time.Second, false},            // spaces trimmed
		{"7/3s", 7, 3 * time.Second, false},           // irreducible
		{"1000000/s", 1000000, time.Second, false},    // high but allowed
		{"999999999.999999999", 0, 0, true},           // above the maximum
		{"0.000001", 1, 1000000 * time.Second, false}, // lowest allowed: one per ~11.6 days
		{"0.0000001", 0, 0, true},                     // below the minimum
		{"12.50", 25, 2 * time.Second, false},         // trailing zero
		{"1/", 0, 0, true},                            // missing unit
		{"/s", 0, 0, true},                            // missing number
		{"1/-1s", 0, 0, true},                         // negative period
		{"3/2m", 1, 40 * time.Second, false},          // 3 per 2 minutes
		{"100/10ms", 10000, time.Second, false},       // 10k per second
		{"1.5/ms", 1500, time.Second, false},          // decimal with ms unit
		{"1/h", 1, time.Hour, false},                  // single-letter hour
		{"4/4", 0, 0, true},                           // bare number as unit
		{"+5", 0, 0, true},                            // explicit sign rejected
		{"5 /s", 0, 0, true},                          // only the whole value is trimmed: "5 " before the slash is no decimal
	}
	for _, tt := range tests {
		r, err := ParseRate(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseRate(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		// Rates are compared as exact ratios (ParseRate reduces them).
		if err == nil && r.Freq*uint64(tt.per) != tt.freq*uint64(r.Per) {
			t.Errorf("ParseRate(%q) = %d per %v, want %d per %v", tt.in, r.Freq, r.Per, tt.freq, tt.per)
		}
	}
}

func TestPacerPace(t *testing.T) {
	r1000 := Rate{Freq: 1000, Per: time.Second}
	r3per10 := Rate{Freq: 333, Per: 10 * time.Second} // 33.3/s: gap 30.03… ms
	tests := []struct {
		name     string
		p        Pacer
		elapsed  time.Duration
		sent     uint64
		wantWait time.Duration
		wantStop bool
	}{
		{"first request is due at once", Pacer{Rate: r1000}, 0, 0, 0, false},
		{"second request 1ms after start", Pacer{Rate: r1000}, 0, 1, time.Millisecond, false},
		{"partially elapsed gap", Pacer{Rate: r1000}, 400 * time.Microsecond, 1, 600 * time.Microsecond, false},
		{"overdue request: no wait, no catch-up beyond the next one", Pacer{Rate: r1000}, 5 * time.Millisecond, 2, 0, false},
		{"duration bounds the schedule: last request at 9.999s", Pacer{Rate: r1000, Duration: 10 * time.Second}, 0, 9999, 9999 * time.Millisecond, false},
		{"request 10000 would be at 10s = duration: stop", Pacer{Rate: r1000, Duration: 10 * time.Second}, 0, 10000, 0, true},
		{"count bounds the schedule", Pacer{Rate: r1000, Count: 5}, 0, 5, 0, true},
		{"fractional rate, exact: request 333 at exactly 10s", Pacer{Rate: r3per10}, 0, 333, 10 * time.Second, false},
		{"fractional rate, request 1 floors to 30.03003ms", Pacer{Rate: r3per10}, 0, 1, 30030030 * time.Nanosecond, false},
		{"overflow of the intended time stops", Pacer{Rate: Rate{Freq: 1, Per: time.Hour * 24 * 365 * 100}}, 0, 1 << 40, 0, true},
		{"zero rate stops", Pacer{}, 0, 0, 0, true},
	}
	for _, tt := range tests {
		wait, stop := tt.p.Pace(tt.elapsed, tt.sent)
		if wait != tt.wantWait || stop != tt.wantStop {
			t.Errorf("%s: Pace(%v, %d) = (%v, %v), want (%v, %v)", tt.name, tt.elapsed, tt.sent, wait, stop, tt.wantWait, tt.wantStop)
		}
	}
}

func TestPacerTotal(t *testing.T) {
	tests := []struct {
		p    Pacer
		want uint64
	}{
		{Pacer{Rate: Rate{1000, time.Second}, Duration: 10 * time.Second}, 10000},       // exact multiple
		{Pacer{Rate: Rate{333, 10 * time.Second}, Duration: 10 * time.Second}, 333},     // 33.3/s for 10s
		{Pacer{Rate: Rate{1, 2 * time.Second}, Duration: 3 * time.Second}, 2},           // at 0s and 2s
		{Pacer{Rate: Rate{1000, time.Second}, Duration: 10*time.Second + 1}, 10001},     // one ns more admits one more
		{Pacer{Rate: Rate{1000, time.Second}, Duration: 10 * time.Second, Count: 7}, 7}, // count wins
		{Pacer{Rate: Rate{7, 3 * time.Second}, Duration: time.Hour}, 8400},              // 7/3 per s × 3600 s
	}
	for i, tt := range tests {
		if got := tt.p.Total(); got != tt.want {
			t.Errorf("row %d: Total() = %d, want %d", i, got, tt.want)
		}
		// Total must agree with Pace: request Total-1 is scheduled, Total is not.
		if tt.want > 0 && tt.p.Count == 0 {
			if _, stop := tt.p.Pace(0, tt.want-1); stop {
				t.Errorf("row %d: request %d should be scheduled", i, tt.want-1)
			}
			if _, stop := tt.p.Pace(0, tt.want); !stop {
				t.Errorf("row %d: request %d should not be scheduled", i, tt.want)
			}
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"1000", "33.3", "60/m", "5/100ms", "0", "-1", "1e9", "abc/def", "0.000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r.Freq == 0 || r.Per <= 0 {
			t.Fatalf("ParseRate(%q) accepted an empty rate %+v", s, r)
		}
		if ps := r.PerSecond(); ps <= 0 || ps > maxRatePerSec {
			t.Fatalf("ParseRate(%q) = %v/s out of bounds", s, ps)
		}
		// The rendering parses back to the same rate (up to reduction).
		back, err := ParseRate(r.String())
		if err == nil && back.PerSecond() != r.PerSecond() && r.Per == time.Second {
			t.Fatalf("round trip %q -> %v -> %v", s, r, back)
		}
	})
}

// TestPacerTick walks a ticked schedule as the pacer would (wake when told,
// send what is due): every request leaves at the first tick boundary at or
// after its intended time (never early, at most one tick late), the
// requests of a tick leave together, none is lost and the exact path is
// untouched.
func TestPacerTick(t *testing.T) {
	for _, tt := range []struct {
		rate Rate
		tick time.Duration
	}{
		{Rate{Freq: 5000, Per: time.Second}, time.Millisecond},             // oha's granularity at bench/loadgen's rate
		{Rate{Freq: 7, Per: 3 * time.Millisecond}, 300 * time.Microsecond}, // spacing not a divisor of the tick
		{Rate{Freq: 100, Per: time.Second}, 10 * time.Millisecond},         // a tick longer than the spacing's half
	} {
		exact := Pacer{Rate: tt.rate, Duration: 3 * time.Second}
		p := exact
		p.Tick = tt.tick
		var now time.Duration
		var sent, wakes uint64
		for {
			wait, stop := p.Pace(now, sent)
			if stop {
				break
			}
			if wait > 0 {
				now += wait
				wakes++
				if now%tt.tick != 0 {
					t.Fatalf("%v tick %v: woke at %v, not on a tick", tt.rate, tt.tick, now)
				}
				continue
			}
			due, _ := p.Intended(sent)
			if now < due || now-due >= tt.tick {
				t.Fatalf("%v tick %v: request %d due %v left at %v", tt.rate, tt.tick, sent, due, now)
			}
			sent++
		}
		if sent != exact.Total() {
			t.Errorf("%v tick %v: sent %d, schedule holds %d", tt.rate, tt.tick, sent, exact.Total())
		}
		// One wake-up per tick that has a request due, not one per request.
		perTick := float64(tt.tick) * tt.rate.PerSecond() / float64(time.Second)
		if want := float64(sent) / max(perTick, 1); float64(wakes) > want+2 {
			t.Errorf("%v tick %v: %d wake-ups for %d requests, want about %.0f", tt.rate, tt.tick, wakes, sent, want)
		}
		// Tick 0 is the exact schedule.
		if w, _ := exact.Pace(150*time.Microsecond, 1); tt.rate.Freq == 5000 && w != 50*time.Microsecond {
			t.Errorf("exact pacer waits %v for request 1 at 150µs, want 50µs", w)
		}
	}
}

func TestValidateSendTick(t *testing.T) {
	for _, tt := range []struct {
		d  time.Duration
		ok bool
	}{
		{0, true}, {100 * time.Microsecond, true}, {time.Millisecond, true}, {10 * time.Millisecond, true},
		{99 * time.Microsecond, false}, {11 * time.Millisecond, false}, {-time.Millisecond, false},
	} {
		if err := ValidateSendTick(tt.d); (err == nil) != tt.ok {
			t.Errorf("ValidateSendTick(%v) = %v, want ok %v", tt.d, err, tt.ok)
		}
	}
}
