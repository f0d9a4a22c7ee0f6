package splice

import (
	"math"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{
		{"8", 1}, {"8bit", 1}, {"10mbit", 1.25e6}, {"10Mbit", 1.25e6}, {"1gbit", 1.25e8},
		{"500kbit", 62500}, {"1kibit", 128}, {"100kbps", 1e5}, {"1mibps", 1 << 20},
		{"2.5MiB/s", 2.5 * (1 << 20)}, {"10kb/s", 1e4}, {"1 MB/s", 1e6}, {"0", 0}, {"64kbit/s", 8000},
	} {
		got, err := ParseRate(c.in)
		if err != nil || math.Abs(got-c.want) > 1e-6 {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "mbit", "-1mbit", "10 furlongs", "1e3mbit", "1..2kbit", "1bit", "99999999999999gbit"} {
		if v, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", bad, v)
		}
	}
}

func TestFormatRateRoundTrip(t *testing.T) {
	for _, s := range []string{"1mbit", "10mbit", "500mbit", "1gbit", "64kbit", "800bit"} {
		v, _ := ParseRate(s)
		if got := FormatRate(v); got != s {
			t.Errorf("FormatRate(ParseRate(%q)) = %q", s, got)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	n, d, err := ParseSchedule("4,16ms")
	if err != nil || n != 4 || d != 16*time.Millisecond {
		t.Fatalf("ParseSchedule = %d, %v, %v", n, d, err)
	}
	for _, bad := range []string{"4", "0,1ms", "x,1ms", "4,x", "4,-1ms", "4,2h"} {
		if _, _, err := ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q): no error", bad)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"4096": 4096, "64k": 64 << 10, "64KiB": 64 << 10, "1m": 1 << 20, "1MiB": 1 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"0", "2m", "k", "1g", "-1"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q): no error", bad)
		}
	}
}

// FuzzParseRate: no input panics, and what parses is a finite rate that
// formats and parses back to within rounding.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10mbit", "1gbit", "100kbps", "2.5MiB/s", "kb/s", "0", "1.", ".5kbit", "8 bit"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err != nil {
			return
		}
		if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			t.Fatalf("ParseRate(%q) = %v", s, v)
		}
		if v == 0 {
			return
		}
		back, err := ParseRate(FormatRate(v))
		if err != nil || math.Abs(back-v)/v > 1e-5 {
			t.Fatalf("%q: %v formats as %q, which parses as %v, %v", s, v, FormatRate(v), back, err)
		}
	})
}
